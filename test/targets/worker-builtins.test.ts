import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'

async function write(root: string, file: string, contents: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true })
  await writeFile(join(root, file), contents)
}

describe('svc build --target cloudflare and Node builtins', () => {
  let root: string
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-worker-'))
  })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('fails on a serverless route that reaches a Node builtin, naming the file that imports it', async () => {
    await write(root, 'src/api/_disk.ts', `import { readFileSync } from 'node:fs'\nexport const read = () => readFileSync('/etc/hostname', 'utf8')\n`)
    await write(root, 'src/api/host.ts', `import { read } from './_disk.ts'\nexport function GET() { return { host: read() } }\n`)
    await write(root, 'src/api/hash.ts', `import { createHash } from 'crypto'\nexport function GET() { return createHash('sha1').digest('hex') }\n`)
    const failure = await buildApp({ root, target: 'cloudflare' }).then(
      () => undefined,
      (error: Error) => error.message,
    )
    expect(failure).toMatch(/Node builtins cannot be bundled for an edge worker/)
    expect(failure).toContain(`node:fs (imported by ${join(root, 'src/api/_disk.ts')})`)
    expect(failure).toContain(`crypto (imported by ${join(root, 'src/api/hash.ts')})`)
  })

  // `events`, `buffer` and `util` are also npm packages written for browsers;
  // when the app installs one, a bare import means that package.
  it('bundles an installed package that shares its name with a Node builtin', async () => {
    await write(root, 'package.json', JSON.stringify({ name: 'worker-app', dependencies: { events: '^3.3.0' } }))
    await write(root, 'node_modules/events/package.json', JSON.stringify({ name: 'events', version: '3.3.0', main: 'events.js' }))
    await write(root, 'node_modules/events/events.js', `export class EventEmitter { emit() { return 'from the events package' } }\n`)
    await write(root, 'src/api/emit.ts', `import { EventEmitter } from 'events'\nexport function GET() { return { said: new EventEmitter().emit() } }\n`)
    await buildApp({ root, target: 'cloudflare' })
    const out = join(root, '.output/cloudflare')
    const mf = new Miniflare({
      scriptPath: join(out, 'index.mjs'),
      modulesRoot: out,
      modules: true,
      compatibilityDate: JSON.parse(await readFile(join(out, 'wrangler.json'), 'utf8')).compatibility_date,
    })
    try {
      const res = await mf.dispatchFetch('http://worker/api/emit')
      expect(await res.json()).toEqual({ said: 'from the events package' })
    } finally {
      await mf.dispose()
    }
  })

  it('still fails on the node: form of a builtin, even with a package of that name installed', async () => {
    await write(root, 'node_modules/events/package.json', JSON.stringify({ name: 'events', version: '3.3.0', main: 'events.js' }))
    await write(root, 'node_modules/events/events.js', `export class EventEmitter {}\n`)
    await write(root, 'src/api/emit.ts', `import { EventEmitter } from 'node:events'\nexport function GET() { return { ok: !!EventEmitter } }\n`)
    await expect(buildApp({ root, target: 'cloudflare' })).rejects.toThrow(/node:events \(imported by/)
  })
})
