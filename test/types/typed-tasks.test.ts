// Typed tasks, checked by the compiler itself: `svc types` writes the app's
// registry, and tsc runs on fixture apps whose mistakes are each marked with
// a ts-expect-error comment. Each marked line must be an error (tsc reports a
// marker with nothing to excuse), and removing the markers must surface
// exactly those errors, so a registry that typed nothing could not pass.
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { svc } from '../cli/_svc.ts'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const typedApp = join(repo, 'test/fixtures/typed-app')
const untypedApp = join(repo, 'test/fixtures/untyped-app')
const tscBin = join(repo, 'node_modules/typescript/bin/tsc')
const MARKER = /^\s*\/\/ @ts-expect-error/

/** Runs tsc on a project and resolves to its exit code and the `file(line,col): error` lines it printed. */
function tsc(project: string): Promise<{ code: number | null; errors: string[]; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tscBin, '--noEmit', '--pretty', 'false', '-p', project], { cwd: repo })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output, errors: output.split('\n').filter((line) => /\): error TS\d+/.test(line)) }))
  })
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file))
}

const scratch = mkdtempSync(join(tmpdir(), 'svc-typed-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A copy of the typed fixture outside the repository, resolving `svc` and packages as the original does. */
function copyTypedApp(name: string): string {
  const dir = join(scratch, name)
  cpSync(typedApp, dir, { recursive: true, filter: (source) => !source.includes(`${join(typedApp, '.svc')}`) })
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const config = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8'))
  config.compilerOptions.paths = { svcjs: [join(repo, 'src/index.ts')] }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config))
  return dir
}

describe('svc types', () => {
  it('writes .svc/types.d.ts with one registry entry per task, and leaves an unchanged file alone', async () => {
    const root = copyTypedApp('cli')
    const first = await svc(['types', '--root', root])
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^Wrote .*\.svc\/types\.d\.ts \(6 tasks, 3 events\)\n$/)
    const text = readFileSync(join(root, '.svc/types.d.ts'), 'utf8')
    expect(text).toContain("declare module 'svcjs' {")
    for (const name of ['double', 'email', 'ping', 'report', 'tag']) {
      expect(text).toContain(`"jobs.${name}": {\n      input: TaskModuleInput<typeof import("../src/api/jobs/${name}.ts")>`)
    }
    // A task on an event, without an input schema, takes the event's data.
    expect(text).toContain(
      `"jobs.receipt": {\n      input: TaskModuleInput<typeof import("../src/api/jobs/receipt.ts"), ReceivedEventData<"order.paid">>`,
    )
    for (const name of ['order.paid', 'order/refunded', 'cache.cleared']) {
      expect(text).toContain(
        `${JSON.stringify(name)}: {\n      data: EventModuleData<typeof import("../src/events.ts"), ${JSON.stringify(name)}>`,
      )
    }
    const again = await svc(['types', '--root', root])
    expect(again.stdout).toMatch(/^Up to date: .*\(6 tasks, 3 events\)\n$/)
  })

  it('fails on config errors, as every command that scans does', async () => {
    const root = copyTypedApp('broken')
    writeFileSync(
      join(root, 'src/api/jobs/ping.ts'),
      "export const route = { kind: 'task', retries: Number(1) }\nexport function POST() {}\n",
    )
    const { code, stderr } = await svc(['types', '--root', root])
    expect(code).toBe(1)
    expect(stderr).toMatch(/src\/api\/jobs\/ping\.ts:1:\d+: /)
    expect(existsSync(join(root, '.svc/types.d.ts'))).toBe(false)
  })
})

describe('tsc on an app with generated task types', () => {
  beforeAll(async () => {
    const { code, stderr } = await svc(['types', '--root', typedApp])
    expect(stderr).toBe('')
    expect(code).toBe(0)
  }, 30_000)

  it('accepts the valid uses and every @ts-expect-error mistake of test/fixtures/typed-app', async () => {
    const { code, output } = await tsc(typedApp)
    expect(output).toBe('')
    expect(code).toBe(0)
  }, 120_000)

  it('reports each marked mistake once the markers are removed: the registry is what types them', async () => {
    const root = copyTypedApp('unmarked')
    expect((await svc(['types', '--root', root])).code).toBe(0)
    const expected: string[] = []
    for (const file of sourceFiles(join(root, 'src'))) {
      const lines = readFileSync(file, 'utf8').split('\n')
      const kept: string[] = []
      for (const line of lines) {
        // The line after a marker moves up to the marker's place.
        if (MARKER.test(line)) expected.push(`${relative(root, file)}:${kept.length + 1}`)
        else kept.push(line)
      }
      writeFileSync(file, kept.join('\n'))
    }
    expect(expected.length).toBeGreaterThanOrEqual(15)
    const { code, errors } = await tsc(root)
    expect(code).not.toBe(0)
    // `…/unmarked/src/client.ts(18,17): error TS2345: …` → `src/client.ts:18`; an error anywhere else stays whole and fails the match.
    const reported = new Set(errors.map((line) => line.replace(/^.*\/unmarked\/(src\/[^(]+)\((\d+),\d+\): error .*$/, '$1:$2')))
    expect([...reported].sort()).toEqual(expected.sort())
  }, 120_000)
})

describe('tsc on an app without generated task types', () => {
  it('compiles with task names as string, payloads and results unknown', async () => {
    expect(existsSync(join(untypedApp, '.svc'))).toBe(false)
    const { code, output } = await tsc(untypedApp)
    expect(output).toBe('')
    expect(code).toBe(0)
  }, 120_000)
})
