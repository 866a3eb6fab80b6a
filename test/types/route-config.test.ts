// `satisfies RouteConfig` (docs/routes.md "Route config") makes a misspelled
// field a type error under tsc, as the scanner makes it a config error. The
// marked lines below are checked by the project's own typecheck; the test
// runs tsc on an app file to show the message a user sees.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import type { RouteConfig } from '../../src/index.ts'

const repo = fileURLToPath(new URL('../../', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-route-types-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Runs tsc on an app whose only route file is `source`, and resolves to its `file(line,col): error` lines. */
function tscOnRoute(source: string): Promise<string[]> {
  mkdirSync(join(scratch, 'src/api/jobs'), { recursive: true })
  writeFileSync(join(scratch, 'src/api/jobs/send.ts'), source)
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        module: 'preserve',
        moduleResolution: 'bundler',
        allowImportingTsExtensions: true,
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: ['node'],
        paths: { svcjs: [join(repo, 'src/index.ts')] },
      },
      include: ['src'],
    }),
  )
  if (!existsSync(join(scratch, 'node_modules'))) symlinkSync(join(repo, 'node_modules'), join(scratch, 'node_modules'), 'dir')
  return new Promise((resolve, reject) => {
    const tsc = join(repo, 'node_modules/typescript/bin/tsc')
    const child = spawn(process.execPath, [tsc, '--noEmit', '--pretty', 'false', '-p', scratch], { cwd: scratch })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.on('error', reject)
    child.on('close', () => resolve(output.split('\n').filter((line) => /\): error TS\d+/.test(line))))
  })
}

describe('RouteConfig under tsc', () => {
  it('takes every route field, and no misspelling of one (checked by the typecheck of this file)', () => {
    const spelled = { kind: 'task', retries: 3, compute: { class: 'function', memory: '4gb' } } satisfies RouteConfig
    // @ts-expect-error retires is not a field of RouteConfig
    const misspelled = { kind: 'task', retires: 3 } satisfies RouteConfig
    // @ts-expect-error memroy is not a field of ComputeConfig
    const misspelledCompute = { kind: 'hot', compute: { memroy: '2gb' } } satisfies RouteConfig
    // @ts-expect-error tsak is not a route kind
    const misspelledKind = { kind: 'tsak' } satisfies RouteConfig
    expect([spelled, misspelled, misspelledCompute, misspelledKind].map((route) => route.kind)).toEqual(['task', 'task', 'hot', 'tsak'])
  })

  it('route = { kind: task, retires: 3 } satisfies RouteConfig is an error at retires, suggesting retries', async () => {
    const errors = await tscOnRoute(
      `import type { RouteConfig } from 'svcjs'\nexport const route = { kind: 'task', retires: 3 } satisfies RouteConfig\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([
      expect.stringMatching(
        /^src\/api\/jobs\/send\.ts\(2,38\): error TS\d+: .*'retires' does not exist in type 'RouteConfig'\. Did you mean to write 'retries'\?$/,
      ),
    ])
  }, 60_000)
})
