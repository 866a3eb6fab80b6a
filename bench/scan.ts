/**
 * Scan benchmark (`npm run bench:scan`): writes 1,000 realistic route files
 * into a temporary app, then reports
 * - the in-process scan-and-normalize time of `scanApp` (median of several
 *   runs after a warm-up), and
 * - the wall time of `svc routes inspect --json` as a child process started
 *   as a user starts it, through `bin/svc.mjs` (median), and
 * - the difference, what the CLI costs beyond the scan: start-up, module
 *   loading and output; and
 * - the same against a fresh process that imports the scanner and scans
 *   once (cold: no warm-up, as the CLI runs), which separates what the CLI
 *   adds from what a first scan in a new process costs.
 * Goals on a 2-core machine: 200 ms in-process; the CLI at most the
 * in-process scan of this same run plus 150 ms.
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
const CLI = fileURLToPath(new URL('../bin/svc.mjs', import.meta.url))
const CLI_OVERHEAD_GOAL = 150

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
    const child = spawnSync(process.execPath, [CLI, 'routes', 'inspect', '--json', '--root', root], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    })
    cli.push(performance.now() - start)
    if (child.status !== 0) throw new Error(`svc routes inspect failed (${child.status}):\n${child.stderr}`)
    if (i === 0 && JSON.parse(child.stdout).routes.length !== routes) throw new Error('the CLI reported a different number of routes')
  }

  // A fresh process that only imports the scanner and scans once, as the CLI does, without printing.
  const MANIFEST = new URL('../src/manifest.ts', import.meta.url).href
  const bare = `import module from 'node:module'; module.enableCompileCache(); const { scanApp } = await import(${JSON.stringify(MANIFEST)}); await scanApp({ root: ${JSON.stringify(root)} })`
  const cold: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', bare], { encoding: 'utf8' })
    cold.push(performance.now() - start)
    if (child.status !== 0) throw new Error(`the bare scan failed (${child.status}):\n${child.stderr}`)
  }

  const row = (label: string, values: number[], goal: number) => {
    const m = median(values)
    return `${label.padEnd(34)} median ${ms(m).padStart(10)}   min ${ms(Math.min(...values)).padStart(10)}   goal ${`${goal.toFixed(0)} ms`.padEnd(8)} ${m <= goal ? 'ok' : 'OVER'}`
  }
  const scanMs = median(inProcess)
  const overhead = median(cli) - scanMs
  console.log(`${routes} routes scanned, ${RUNS} runs each`)
  console.log(row('in-process scanApp()', inProcess, 200))
  console.log(row('svc routes inspect --json (CLI)', cli, scanMs + CLI_OVERHEAD_GOAL))
  console.log(
    `${'fresh process, one cold scan'.padEnd(34)} median ${ms(median(cold)).padStart(10)}   min ${ms(Math.min(...cold)).padStart(10)}`,
  )
  console.log(`${'CLI minus that process'.padEnd(34)} median ${ms(median(cli) - median(cold)).padStart(10)}`)
  console.log(
    `${'CLI minus in-process scan'.padEnd(34)} median ${ms(overhead).padStart(10)}   ${''.padEnd(18)}goal ${`${CLI_OVERHEAD_GOAL} ms`.padEnd(8)} ${overhead <= CLI_OVERHEAD_GOAL ? 'ok' : 'OVER'}`,
  )
} finally {
  rmSync(root, { recursive: true, force: true })
}
