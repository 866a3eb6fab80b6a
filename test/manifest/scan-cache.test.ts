import { execFileSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { ConfigError, scanApp } from '../../src/manifest.ts'
import { SETTLE_MS, fingerprintOf, scannerFingerprint } from '../../src/manifest/scan-cache.ts'
import { svc } from '../cli/_svc.ts'

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url))
const scanModule = new URL('../../src/manifest/scan.ts', import.meta.url).href

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A copy of a fixture app in a temporary folder, so that its `.svc/` is the test's own. */
function copyApp(name: string, removeAfter = dirs): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-scan-cache-'))
  removeAfter.push(dir)
  cpSync(fixture(name), dir, { recursive: true, filter: (source) => !source.includes('/.svc') })
  return dir
}

const cacheFile = (root: string) => join(root, '.svc/scan-cache.json')
const readCache = (root: string) => JSON.parse(readFileSync(cacheFile(root), 'utf8'))

const APPS = ['app-basic', 'bad-config', 'bad-duplicates', 'bad-paths', 'same-url-app', 'shared-helpers-app']
const COMMANDS = [
  ['routes', 'inspect'],
  ['routes', 'inspect', '--json'],
  ['runtime', 'advise', '--json'],
  ['tasks', 'list'],
]

describe('the CLI with the scan cache', () => {
  test.each(APPS)(
    'prints the same bytes with and without the cache (%s)',
    async (app) => {
      const root = copyApp(app)
      for (const command of COMMANDS) {
        const args = [...command, '--root', root]
        const uncached = await svc(args, { env: { SVC_SCAN_CACHE: '0' } })
        expect(existsSync(cacheFile(root))).toBe(false)
        const writing = await svc(args)
        expect(existsSync(cacheFile(root))).toBe(true)
        const reading = await svc(args)
        for (const cached of [writing, reading]) {
          expect({ code: cached.code, stdout: cached.stdout, stderr: cached.stderr }).toEqual({
            code: uncached.code,
            stdout: uncached.stdout,
            stderr: uncached.stderr,
          })
        }
        rmSync(join(root, '.svc'), { recursive: true })
      }
    },
    60_000,
  )

  test('SVC_SCAN_CACHE=0 neither reads nor writes the cache', async () => {
    const root = copyApp('app-basic')
    await svc(['tasks', 'list', '--root', root], { env: { SVC_SCAN_CACHE: '0' } })
    expect(existsSync(join(root, '.svc'))).toBe(false)
  })
})

describe('scanApp with the cache', () => {
  test('is off unless asked for, and gives the same result as a scan without it', async () => {
    for (const app of APPS) {
      const root = copyApp(app)
      const plain = await scanApp({ root })
      expect(existsSync(cacheFile(root))).toBe(false)
      const first = await scanApp({ root, cache: true })
      const second = await scanApp({ root, cache: true })
      expect(first).toStrictEqual(plain)
      expect(second).toStrictEqual(plain)
      for (const error of second.errors) expect(error).toBeInstanceOf(ConfigError)
      expect(second.errors.map(String)).toEqual(plain.errors.map(String))
    }
  })

  test('reads results from the cache while the fingerprint and the text match', async () => {
    const root = copyApp('app-basic')
    await scanApp({ root, cache: true, cacheFingerprint: 'a' })
    // A result that only the cache can give shows that it was used.
    const cache = readCache(root)
    cache.entries['src/api/health.mjs'].value.warnings = ['from the cache']
    writeFileSync(cacheFile(root), JSON.stringify(cache))
    const health = async (fingerprint: string) =>
      (await scanApp({ root, cache: true, cacheFingerprint: fingerprint })).routes.find((r) => r.file === 'src/api/health.mjs')!
    expect((await health('a')).warnings).toEqual(['from the cache'])
    // Another scanner (its code edited) ignores every entry.
    expect((await health('b')).warnings).not.toContain('from the cache')
  })

  test('a file whose text changed is scanned again', async () => {
    const root = copyApp('app-basic')
    await scanApp({ root, cache: true })
    writeFileSync(join(root, 'src/api/health.mjs'), "export const route = { kind: 'task' }\nexport async function POST() {}\n")
    const scan = await scanApp({ root, cache: true })
    expect(scan).toStrictEqual(await scanApp({ root }))
    expect(scan.routes.find((r) => r.file === 'src/api/health.mjs')!.kind).toBe('task')
  })

  test("keeps its entries in the order of the scan's result, which a scan answered from it then reads in order", async () => {
    const root = copyApp('app-basic')
    const scan = await scanApp({ root, cache: true })
    expect(Object.keys(readCache(root).entries)).toEqual([...scan.routes, ...scan.pages].map((item) => item.file))
  })

  test('entries of files that no longer exist are dropped, and no temporary file is left', async () => {
    const root = copyApp('app-basic')
    await scanApp({ root, cache: true })
    expect(Object.keys(readCache(root).entries)).toContain('src/api/health.mjs')
    rmSync(join(root, 'src/api/health.mjs'))
    await scanApp({ root, cache: true })
    expect(Object.keys(readCache(root).entries)).not.toContain('src/api/health.mjs')
    expect(readdirSync(join(root, '.svc'))).toEqual(['scan-cache.json'])
  })

  test.each([
    ['corrupt', (root: string) => writeFileSync(cacheFile(root), '{"format":1,"fingerp')],
    ['from another format', (root: string) => writeFileSync(cacheFile(root), JSON.stringify({ ...readCache(root), format: 0 }))],
    ['malformed', (root: string) => writeFileSync(cacheFile(root), JSON.stringify({ ...readCache(root), entries: { x: 1 } }))],
    [
      'unreadable',
      (root: string) => {
        rmSync(cacheFile(root))
        mkdirSync(cacheFile(root))
      },
    ],
    [
      'unwritable',
      (root: string) => {
        rmSync(join(root, '.svc'), { recursive: true })
        writeFileSync(join(root, '.svc'), 'not a folder')
      },
    ],
  ])('a cache that is %s is ignored without an error', async (_, spoil) => {
    const root = copyApp('bad-config')
    const plain = await scanApp({ root })
    await scanApp({ root, cache: true })
    spoil(root)
    expect(await scanApp({ root, cache: true })).toStrictEqual(plain)
    expect(await scanApp({ root, cache: true })).toStrictEqual(plain)
  })

  test('the fingerprint changes when a scanner file is edited', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-scan-fingerprint-'))
    dirs.push(dir)
    const files = [join(dir, 'scan.ts'), join(dir, 'literal.ts')]
    writeFileSync(files[0], 'export const a = 1\n')
    writeFileSync(files[1], 'export const b = 2\n')
    const before = fingerprintOf(files, ['svc 1.0.0'])
    expect(fingerprintOf(files, ['svc 1.0.0'])).toBe(before)
    writeFileSync(files[1], 'export const b = 20\n')
    const edited = fingerprintOf(files, ['svc 1.0.0'])
    expect(edited).not.toBe(before)
    expect(fingerprintOf(files, ['svc 1.0.1'])).not.toBe(edited)
  })

  test('a scan that every file hits loads neither the parser nor the per-file scanner', () => {
    const root = copyApp('app-basic')
    // Each scan in a fresh process; a load hook sees every module it loads, ES or CommonJS.
    const script = `
      import { registerHooks } from 'node:module'
      const loaded = []
      registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context) } })
      const { scanApp } = await import(${JSON.stringify(scanModule)})
      const scan = await scanApp({ root: ${JSON.stringify(root)}, cache: true })
      console.log(JSON.stringify({
        routes: scan.routes.length,
        parser: loaded.some((url) => url.includes('/oxc-parser/')),
        scanner: loaded.some((url) => url.endsWith('/manifest/scan-file.ts')),
      }))
    `
    const run = () => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))
    expect(run()).toEqual({ routes: 11, parser: true, scanner: true })
    expect(run()).toEqual({ routes: 11, parser: false, scanner: false })
  })
})

describe('a cache whose stats have settled', () => {
  // The cache takes a file's or folder's stat for its content only once the
  // stat is older than the scan by SETTLE_MS. Each app is copied, left to
  // settle, scanned (which writes its cache), changed, and left to settle
  // again, so that the change is noticed from the stats alone, as when svc
  // runs again some time after an edit.
  const changes: Record<string, (root: string) => void> = {
    unchanged: () => {},
    'edited in place': (root) => {
      const file = join(root, 'src/api/health.mjs')
      const before = statSync(file)
      writeFileSync(file, readFileSync(file, 'utf8').replaceAll('GET', 'PUT'))
      utimesSync(file, 1_700_000_000, 1_700_000_000)
      expect(statSync(file)).toMatchObject({ size: before.size, mtimeMs: before.mtimeMs })
    },
    added: (root) => writeFileSync(join(root, 'src/api/ping.ts'), 'export function GET() {}\n'),
    'added deep': (root) => writeFileSync(join(root, 'src/api/users/me.ts'), 'export function GET() {}\n'),
    removed: (root) => rmSync(join(root, 'src/api/live/room.ts')),
    'renamed private': (root) => renameSync(join(root, 'src/api/jobs'), join(root, 'src/api/_jobs')),
  }
  const apps = new Map<string, string>()
  const copies: string[] = []
  const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 200))
  beforeAll(async () => {
    for (const name of Object.keys(changes)) apps.set(name, copyApp('app-basic', copies))
    // A modification time in whole seconds, which utimes can put back exactly.
    utimesSync(join(apps.get('edited in place')!, 'src/api/health.mjs'), 1_700_000_000, 1_700_000_000)
    await settle()
    for (const root of apps.values()) await scanApp({ root, cache: true })
    for (const [name, change] of Object.entries(changes)) change(apps.get(name)!)
    await settle()
  }, 4 * SETTLE_MS)
  afterAll(() => {
    for (const dir of copies) rmSync(dir, { recursive: true, force: true })
  })

  /** Scans `name`'s copy with its cache, checks the result against a scan without it, and gives the routes. */
  const scan = async (name: string) => {
    const root = apps.get(name)!
    const cached = await scanApp({ root, cache: true })
    expect(cached).toStrictEqual(await scanApp({ root }))
    return cached.routes
  }

  test('keeps the stat of every file and of every folder it listed', () => {
    const cache = readCache(apps.get('unchanged')!)
    expect(Object.values(cache.entries).every((entry) => typeof (entry as { stat?: unknown }).stat === 'string')).toBe(true)
    expect(Object.keys(cache.dirs).sort()).toEqual(
      [
        'src/api',
        'src/api/(admin)',
        'src/api/files',
        'src/api/jobs',
        'src/api/live',
        'src/api/users',
        'src/pages',
        'src/pages/blog',
      ].sort(),
    )
  })

  test('answers an unchanged file from its stat, without reading it', async () => {
    const root = apps.get('unchanged')!
    // An entry whose text hash matches no text: only a file that is not read gets its result.
    const cache = readCache(root)
    cache.entries['src/api/health.mjs'].text = 'not the hash of any text'
    cache.entries['src/api/health.mjs'].value.warnings = ['from the cache']
    writeFileSync(cacheFile(root), JSON.stringify(cache))
    const health = (await scanApp({ root, cache: true })).routes.find((r) => r.file === 'src/api/health.mjs')!
    expect(health.warnings).toEqual(['from the cache'])
  })

  test('notices a file edited in place whose size and modification time were put back', async () => {
    expect((await scan('edited in place')).find((r) => r.file === 'src/api/health.mjs')!.methods).toContain('PUT')
  })

  test('notices a new file in the routes folder', async () => {
    expect((await scan('added')).map((r) => r.path)).toContain('/api/ping')
  })

  test('notices a new file in a folder below the routes folder', async () => {
    expect((await scan('added deep')).map((r) => r.path)).toContain('/api/users/me')
  })

  test('notices a deleted file', async () => {
    expect((await scan('removed')).map((r) => r.file)).not.toContain('src/api/live/room.ts')
  })

  test('notices a folder renamed to a private name', async () => {
    expect((await scan('renamed private')).map((r) => r.file)).not.toContain('src/api/jobs/notify.ts')
  })
})

test("the scanner's fingerprint holds the parser's version, so another parser drops every entry", () => {
  const { version } = JSON.parse(readFileSync(new URL('../../node_modules/oxc-parser/package.json', import.meta.url), 'utf8'))
  expect(scannerFingerprint()).toContain(`oxc-parser ${version}`)
})
