/**
 * Scan benchmark (`npm run bench:scan`): writes 1,000 realistic route files
 * into a temporary app, then reports
 * - the in-process scan-and-normalize time of `scanApp` (median of several
 *   runs after a warm-up), and
 * - the wall time of `svc routes inspect --json` as a child process (median).
 * Goals on a 2-core machine: 200 ms in-process, 500 ms for the CLI.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { scanApp } from '../src/manifest.ts'
import { generateRoutes } from './_routes.ts'

const FILES = 1000
const RUNS = 9
const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url))

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(1)} ms`

const root = mkdtempSync(join(tmpdir(), 'svc-bench-scan-'))
try {
  const files = generateRoutes(FILES)
  let bytes = 0
  for (const file of files) {
    mkdirSync(dirname(join(root, file.path)), { recursive: true })
    writeFileSync(join(root, file.path), file.source)
    bytes += file.source.length
  }
  console.log(`${files.length} route files, ${(bytes / 1024).toFixed(0)} KiB, in ${root}`)

  // In process: warm up the parser and the JIT, then time full scans.
  for (let i = 0; i < 2; i++) await scanApp({ root })
  const inProcess: number[] = []
  let routes = 0
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    const result = await scanApp({ root })
    inProcess.push(performance.now() - start)
    routes = result.routes.length
    if (result.errors.length > 0) throw new Error(`the generated app has config errors:\n${result.errors.map(String).join('\n')}`)
  }

  // The CLI as a user runs it: a fresh Node process each time, output piped.
  const cli: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    const child = spawnSync(process.execPath, [CLI, 'routes', 'inspect', '--json', '--root', root], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
    cli.push(performance.now() - start)
    if (child.status !== 0) throw new Error(`svc routes inspect failed (${child.status}):\n${child.stderr}`)
    if (i === 0 && JSON.parse(child.stdout).routes.length !== routes) throw new Error('the CLI reported a different number of routes')
  }

  const row = (label: string, values: number[], goal: number) => {
    const m = median(values)
    return `${label.padEnd(34)} median ${ms(m).padStart(10)}   min ${ms(Math.min(...values)).padStart(10)}   goal ${goal} ms  ${m <= goal ? 'ok' : 'OVER'}`
  }
  console.log(`${routes} routes scanned, ${RUNS} runs each`)
  console.log(row('in-process scanApp()', inProcess, 200))
  console.log(row('svc routes inspect --json (CLI)', cli, 500))
} finally {
  rmSync(root, { recursive: true, force: true })
}
