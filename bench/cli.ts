/**
 * CLI benchmark (`npm run bench:cli`). Every command runs as a fresh process
 * started the way a user starts it (`bin/svc.mjs`), output piped.
 *
 * - Start-up: `svc --help` and `svc tasks list` on a small app against
 *   `node -e 0`, in alternating rounds so that a machine that gets busier
 *   partway through slows all of them alike. Goal: each at most 1.5 ×
 *   `node -e 0`.
 * - `svc routes inspect --json` on 100, 1,000 and 5,000 generated routes
 *   against `scanApp()` on the same app in this process (warm). Goal: the
 *   CLI at most the in-process scan plus 150 ms; the difference is what the
 *   CLI adds (start-up, module loading, a scan with a cold JIT, output).
 * - The same command without the scan cache against the first `scanApp()`
 *   of a fresh process (cold JIT, parser loaded on the first file, compile
 *   cache on as in the CLI), in alternating runs: the difference is what the
 *   CLI adds to a cold scan (start-up, the command's modules, output). It
 *   has no goal of its own; the goal above stays against the warm scan.
 *
 * The first run of each command only warms Node's compile cache and the file system.
 * Commands that scan reuse `.svc/scan-cache.json` from the second run on, so
 * each is also timed with `SVC_SCAN_CACHE=0` (every file parsed, as on a first
 * run or after an edit to every file), and `routes inspect` prints its first
 * run, which writes the cache, on its own.
 * Each line also shows the process's CPU time, which a busy machine moves far
 * less than wall time. `npm run bench:cli -- --start-only` skips the scans;
 * `-- --sizes 100,1000` scans those sizes only.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { procCpu } from './_proc-cpu.ts'
import { writeGeneratedApp } from './_routes.ts'
import { measureScan } from './_scan-measure.ts'
import { SETTLE_MS } from '../src/manifest/scan-cache.ts'

const ROUNDS = 15
const START_GOAL = 1.5
// `-- --sizes 100,1000` times routes inspect at those sizes only.
const sizesArg = process.argv.indexOf('--sizes')
const INSPECT_SIZES = sizesArg === -1 ? [100, 1_000, 5_000] : process.argv[sizesArg + 1].split(',').map(Number)
const INSPECT_RUNS = 5
const OVERHEAD_GOAL_MS = 150
const BIN = fileURLToPath(new URL('../bin/svc.mjs', import.meta.url))
const SCAN_MODULE = new URL('../src/manifest/scan.ts', import.meta.url).href
/**
 * A fresh process's first scanApp(), started as the CLI starts (compile
 * cache on, the scanner's entry module imported alone); prints its
 * milliseconds.
 */
const COLD_SCAN = `
process.getBuiltinModule('node:module').enableCompileCache?.()
const { scanApp } = await import(${JSON.stringify(SCAN_MODULE)})
const start = performance.now()
const result = await scanApp({ root: process.argv[1], cache: false })
const elapsed = performance.now() - start
if (result.errors.length > 0) throw new Error('the generated app has config errors')
process.stdout.write(JSON.stringify({ elapsed, routes: result.routes.length }))
`

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (value: number) => `${value.toFixed(1)} ms`

/**
 * CPU milliseconds of the children this process has waited for; NaN off
 * Linux. On a machine shared with other work, CPU time moves far less than
 * wall time.
 */
function childrenCpuMs(): number {
  const cpu = procCpu('self')
  return cpu ? cpu.children * 1000 : Number.NaN
}

/** Wall and CPU time of one fresh process; throws when it fails. */
function timeProcess(label: string, args: string[], env?: Record<string, string>): { elapsed: number; cpu: number; stdout: string } {
  const cpuBefore = childrenCpuMs()
  const start = performance.now()
  const child = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: env && { ...process.env, ...env },
  })
  const elapsed = performance.now() - start
  const cpuAfter = childrenCpuMs()
  if (child.status !== 0) throw new Error(`${label} failed (${child.status}):\n${child.stderr}`)
  return { elapsed, cpu: cpuAfter - cpuBefore, stdout: child.stdout }
}

function startUp(): void {
  const root = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'))
  try {
    mkdirSync(join(root, 'src/api/jobs'), { recursive: true })
    writeFileSync(join(root, 'src/api/hello.ts'), 'export function GET() {\n  return { hello: "world" }\n}\n')
    writeFileSync(
      join(root, 'src/api/jobs/notify.ts'),
      "export const route = { kind: 'task', retries: 2 } as const\nexport const schedule = '*/5 * * * *'\nexport async function POST() {\n  return { sent: true }\n}\n",
    )
    const commands: [label: string, args: string[], env?: Record<string, string>][] = [
      ['node -e 0', ['-e', '0']],
      ['svc --help', [BIN, '--help']],
      ['svc tasks list', [BIN, 'tasks', 'list', '--root', root]],
      ['  no scan cache', [BIN, 'tasks', 'list', '--root', root], { SVC_SCAN_CACHE: '0' }],
    ]
    const times = new Map(commands.map(([label]) => [label, { wall: [] as number[], cpu: [] as number[] }]))
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [label, args, env] of commands) {
        const { elapsed, cpu } = timeProcess(label, args, env)
        if (round === 0) continue
        times.get(label)!.wall.push(elapsed)
        times.get(label)!.cpu.push(cpu)
      }
    }
    const baseline = times.get('node -e 0')!
    console.log(`Start-up, Node ${process.version}, median of ${ROUNDS} alternating rounds (compile cache warm)\n`)
    console.log(`${''.padEnd(16)} ${'wall'.padStart(10)}   ${'ratio'.padStart(7)}   ${'CPU'.padStart(10)}   ${'ratio'.padStart(7)}`)
    for (const [label] of commands) {
      const { wall, cpu } = times.get(label)!
      const ratio = median(wall) / median(baseline.wall)
      const cpuRatio = median(cpu) / median(baseline.cpu)
      const goal = label === 'node -e 0' ? '' : `goal <= ${START_GOAL} x  ${ratio <= START_GOAL ? 'ok' : 'OVER'}`
      console.log(
        `${label.padEnd(16)} ${ms(median(wall)).padStart(10)}   ${`${ratio.toFixed(2)} x`.padStart(7)}   ${ms(median(cpu)).padStart(10)}   ${`${cpuRatio.toFixed(2)} x`.padStart(7)}   ${goal}`,
      )
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

async function inspect(): Promise<void> {
  console.log(`\nsvc routes inspect --json against scanApp() in process (warm), median of ${INSPECT_RUNS} CLI runs`)
  console.log(`(vs cold scan: the CLI without the scan cache against a fresh process's first scanApp(), alternating)\n`)
  console.log(
    `${'routes'.padStart(6)}  ${''.padEnd(14)}  ${'scanApp()'.padStart(10)}  ${'CLI'.padStart(10)}  ${'CLI CPU'.padStart(10)}  ${'CLI / scan'.padStart(10)}  ${'CLI - scan'.padStart(10)}`,
  )
  for (const size of INSPECT_SIZES) {
    const { root } = writeGeneratedApp(size)
    const written = Date.now()
    try {
      const scan = (await measureScan(root, size)).median
      const args = [BIN, 'routes', 'inspect', '--json', '--root', root]
      // Start-up never ran this command, so its modules are not in Node's
      // compile cache yet: one run without the scan cache (which writes
      // nothing under the app) puts them there, and the first run below
      // measures the app's first scan, not Node's first sight of the command.
      if (size === INSPECT_SIZES[0]) timeProcess('svc routes inspect', args, { SVC_SCAN_CACHE: '0' })
      // The scan cache takes a file's stat for its text once the stat is
      // SETTLE_MS old; the files of an app edited more than that before its
      // first scan are, and the first run keeps their stats.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, written + SETTLE_MS + 100 - Date.now())))
      // The first run parses every file and writes the scan cache.
      const first = timeProcess('svc routes inspect', args)
      if (JSON.parse(first.stdout).routes.length !== size) throw new Error('the CLI reported a different number of routes')
      const row = (label: string, wall: number, cpu: number) => {
        const overhead = wall - scan
        console.log(
          `${String(size).padStart(6)}  ${label.padEnd(14)}  ${ms(scan).padStart(10)}  ${ms(wall).padStart(10)}  ${ms(cpu).padStart(10)}  ${`${(wall / scan).toFixed(2)} x`.padStart(10)}  ${ms(overhead).padStart(10)}   goal <= ${OVERHEAD_GOAL_MS} ms ${overhead <= OVERHEAD_GOAL_MS ? 'ok' : 'OVER'}`,
        )
      }
      row('first run', first.elapsed, first.cpu)
      const hit = { wall: [] as number[], cpu: [] as number[] }
      for (let i = 0; i < INSPECT_RUNS; i++) {
        const run = timeProcess('svc routes inspect', args)
        hit.wall.push(run.elapsed)
        hit.cpu.push(run.cpu)
      }
      row('cache hit', median(hit.wall), median(hit.cpu))
      // Alternating runs (CLI, cold scan, CLI, …), so that a machine that
      // gets busier partway through slows both alike.
      const cold = { wall: [] as number[], cpu: [] as number[], scan: [] as number[] }
      for (let i = 0; i < INSPECT_RUNS; i++) {
        const run = timeProcess('svc routes inspect', args, { SVC_SCAN_CACHE: '0' })
        cold.wall.push(run.elapsed)
        cold.cpu.push(run.cpu)
        const scan = JSON.parse(timeProcess('cold scanApp()', ['--input-type=module', '-e', COLD_SCAN, root]).stdout)
        if (scan.routes !== size) throw new Error('the cold scan reported a different number of routes')
        cold.scan.push(scan.elapsed)
      }
      row('no scan cache', median(cold.wall), median(cold.cpu))
      const coldScan = median(cold.scan)
      const wall = median(cold.wall)
      console.log(
        `${String(size).padStart(6)}  ${'vs cold scan'.padEnd(14)}  ${ms(coldScan).padStart(10)}  ${ms(wall).padStart(10)}  ${''.padStart(10)}  ${`${(wall / coldScan).toFixed(2)} x`.padStart(10)}  ${ms(wall - coldScan).padStart(10)}   first scanApp() of a fresh process, no scan cache`,
      )
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }
}

startUp()
if (!process.argv.includes('--start-only')) await inspect()
