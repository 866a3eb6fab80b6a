// What each command loads: a command loads the modules it needs and no
// others, so that `svc --help` and `svc tasks list` start about as fast as
// Node itself (bench/cli.ts times them).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { COMMANDS } from '../../src/cli/_commands.ts'

const BIN = fileURLToPath(new URL('../../bin/svc.mjs', import.meta.url))
const REPO = pathToFileURL(fileURLToPath(new URL('../../', import.meta.url))).href

const dir = mkdtempSync(join(tmpdir(), 'svc-cli-startup-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// Prints, at exit, every module the process loaded from this repository.
const hook = join(dir, 'record-loads.mjs')
writeFileSync(
  hook,
  [
    "import module from 'node:module'",
    'const loaded = []',
    'const bare = []',
    'module.registerHooks({',
    '  load(url, context, next) { loaded.push(url); return next(url, context) },',
    '  resolve(specifier, context, next) { if (/^[@a-z][^:]*$/i.test(specifier)) bare.push(specifier); return next(specifier, context) },',
    '})',
    `process.on('exit', () => process.stderr.write('BARE ' + JSON.stringify(bare) + '\\n'))`,
    // What is open as the process exits (read before this hook's own writes open stderr).
    `const open = []; process.prependListener('exit', () => open.push(...process.getActiveResourcesInfo()))`,
    `process.on('exit', () => process.stderr.write('OPEN ' + JSON.stringify(open) + '\\n'))`,
    `process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(loaded.filter((url) => url.startsWith(${JSON.stringify(REPO)})).map((url) => url.slice(${REPO.length}))) + '\\n'))`,
    // Built-ins imported as ES modules: each builds a facade that reads every export.
    `process.on('exit', () => process.stderr.write('BUILTINS ' + JSON.stringify(loaded.filter((url) => url.startsWith('node:'))) + '\\n'))`,
  ].join('\n'),
)

const app = join(dir, 'app')
mkdirSync(join(app, 'src/api/jobs'), { recursive: true })
writeFileSync(join(app, 'src/api/hello.ts'), 'export function GET() {\n  return { hello: "world" }\n}\n')
writeFileSync(join(app, 'src/api/jobs/notify.ts'), "export const route = { kind: 'task' } as const\nexport async function POST() {}\n")

async function loadsOf(
  args: string[],
): Promise<{ code: number | null; stdout: string; loaded: string[]; builtins: string[]; bare: string[]; open: string[] }> {
  const child = spawn(process.execPath, ['--import', pathToFileURL(hook).href, BIN, ...args], { env: { ...process.env, NO_COLOR: '1' } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  const list = (label: string): string[] => {
    const line = stderr.split('\n').find((l) => l.startsWith(`${label} `))
    if (!line) throw new Error(`no list of loaded modules:\n${stderr}`)
    return JSON.parse(line.slice(label.length + 1))
  }
  return { code, stdout, loaded: list('LOADED'), builtins: list('BUILTINS'), bare: list('BARE'), open: list('OPEN') }
}

describe('what a command loads', () => {
  it('svc --help lists every command without loading any command module', async () => {
    const { code, stdout, loaded } = await loadsOf(['--help'])
    expect(code).toBe(0)
    for (const [name, { description }] of Object.entries(COMMANDS)) expect(stdout).toMatch(new RegExp(`${name}\\s+${description}`))
    expect(
      loaded.filter((url) => url.includes('src/cli/commands/') || url.includes('src/runtime/') || url.includes('src/manifest')),
    ).toEqual([])
  })

  it('svc tasks list loads the scanner, not the task runtime, the bundler or the module loader', async () => {
    const { code, stdout, loaded } = await loadsOf(['tasks', 'list', '--json', '--root', app])
    expect(code).toBe(0)
    expect(JSON.parse(stdout).tasks.map((t: { name: string }) => t.name)).toEqual(['jobs.notify'])
    expect(loaded).toContain('src/manifest/scan.ts')
    const heavy = /src\/runtime\/tasks\/runtime|src\/node\/|node_modules\/(rolldown|jiti|hono|consola|srvx|crossws)\//
    expect(loaded.filter((url) => heavy.test(url))).toEqual([])
    expect(loaded.filter((url) => url.includes('src/cli/commands/') && !url.endsWith('tasks.ts'))).toEqual([])
  })

  it('svc tasks list answered from the scan cache loads neither the parser, the per-file scanner nor the advisor', async () => {
    rmSync(join(app, '.svc'), { recursive: true, force: true })
    const first = await loadsOf(['tasks', 'list', '--json', '--root', app])
    expect(first.loaded).toContain('src/manifest/scan-file.ts')
    const second = await loadsOf(['tasks', 'list', '--json', '--root', app])
    expect(second.code).toBe(0)
    expect(second.stdout).toBe(first.stdout)
    const scanning =
      /node_modules\/(oxc-parser|@oxc-parser|croner)\/.*\.(m?js|node)$|src\/manifest\/(scan-file|advisor|signals|literal)\.ts/
    expect(second.loaded.filter((url) => scanning.test(url))).toEqual([])
  })

  it('no command imports a built-in module as an ES module, whose facade would load what every one of its exports needs', async () => {
    for (const args of [['--help'], ['tasks', 'list', '--root', app], ['routes', 'inspect', '--json', '--root', app]]) {
      const { code, builtins } = await loadsOf(args)
      expect(code, args.join(' ')).toBe(0)
      expect(builtins, args.join(' ')).toEqual([])
    }
  })

  it('a command resolves the citty package once: each resolution of a package reads its exports map again', async () => {
    for (const args of [
      ['tasks', 'list', '--root', app],
      ['routes', 'inspect', '--json', '--root', app],
    ]) {
      const { code, bare } = await loadsOf(args)
      expect(code, args.join(' ')).toBe(0)
      expect(
        bare.filter((specifier) => specifier === 'citty'),
        args.join(' '),
      ).toEqual(['citty'])
    }
  })

  it('a command that prints once makes no stdout or stderr stream, and leaves nothing open', async () => {
    for (const args of [
      ['--help'],
      ['routes', '--help'],
      ['tasks', 'list', '--root', app],
      ['routes', 'inspect', '--json', '--root', app],
    ]) {
      const { code, stdout, open } = await loadsOf(args)
      expect(code, args.join(' ')).toBe(0)
      expect(stdout, args.join(' ')).not.toBe('')
      expect(open, args.join(' ')).toEqual([])
    }
  })

  it('the top-level help describes each command as its own help does', async () => {
    for (const [name, entry] of Object.entries(COMMANDS)) {
      const command = await entry.load()
      const meta = typeof command.meta === 'function' ? await command.meta() : await command.meta
      expect(meta?.description, name).toBe(entry.description)
    }
  })
})
