/**
 * Task runtime benchmark (`npm run bench:tasks`, which runs Node with
 * --expose-gc). Reports, each next to its goal:
 * - in-process dispatch of no-op runs, from trigger to completed (median of
 *   several rounds after a warm-up of at least 50,000 runs), at 1,000, 10,000
 *   and 100,000 runs all triggered at once: at least 100,000 runs/s at
 *   10,000; then 100,000 runs with at most 1,000 in flight at a time, which
 *   separates growth with the number of runs (the store retains them all)
 *   from growth with the number in flight at once; each size with the
 *   share of its time the garbage collector took; next to them a bare
 *   dispatch loop at the same sizes (bench/_bare-dispatch.ts), its
 *   collector's share at 100,000 at once, and svc's growth at once as a
 *   ratio to the loop's; and the heap each run holds while it is in
 *   flight, with 100,000 in flight;
 * - replay of a run with 100, 1,000 and 5,000 completed steps, from
 *   re-dispatch to completed (median; the sizes take turns after a warm-up
 *   of each): at most 10 ms at 1,000;
 * - recording a run of 100, 1,000 and 5,000 steps, one after another, on
 *   the memory store and on a `SqliteRunStore` file (bench/_steps-growth.ts),
 *   whose cost per step must not grow with the steps a run already has;
 * - heap held by 10,000 retained finished runs in the memory store: at
 *   most 50 MB;
 * - the same dispatch on a `SqliteRunStore` file (WAL, synchronous=FULL),
 *   with no-op runs and with runs of three `step.run`, each as a ratio to
 *   memory dispatch (the median of rounds that each pair a SQLite round with
 *   a memory round run just before it): at least 0.5 and 0.25; next to
 *   them, the same statements and commits issued straight through
 *   node:sqlite (bench/_sqlite-floor.ts) in each pair, the floor under any
 *   store on that file, and memory dispatch as a ratio to that floor, the
 *   highest ratio a SQLite store could reach on this machine; and the
 *   store's runs/s against the same writes with a commit per 100 runs, as
 *   an app writing its own jobs in batches would: at least 0.8;
 * - stores holding 10,000 and 100,000 retained finished runs (memory and
 *   SQLite, each at its bound, so every new run evicts one): the cost of
 *   dispatching a run and of reading a retained one.
 * Every figure measured at several sizes prints its cost per item at the
 * largest size as a ratio to the smallest: at most 1.5 (cost grows linearly).
 *
 *   npm run bench:tasks -- [--only dispatch,flow,replay,steps,heap,sqlite,stores,telemetry,transaction,batch]
 *
 * `--only` runs the sections named (comma-separated) and skips the others.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PerformanceObserver } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { SqliteRunStore } from '../src/sqlite/store.ts'
import { bareDispatch } from './_bare-dispatch.ts'
import { sqliteFloor } from './_sqlite-floor.ts'
import { BATCH_RUNS, measureTriggerBatch } from './_trigger-batch.ts'
import { recordSteps } from './_steps-growth.ts'
import { newRunId } from '../src/runtime/tasks/base/ids.ts'
import { MemoryRunStore, createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store/store.ts'
import type { Logger, RunRecord, RuntimeApiRoute, SqlTransaction, StepRecord, TaskContext } from '../src/types.ts'
import * as otelApi from '@opentelemetry/api'
import { otelTelemetry } from '../src/runtime/telemetry/otel.ts'
import type { Telemetry } from '../src/runtime/telemetry/types.ts'
import { profileOf, registerDroppingSdk } from './_telemetry.ts'

const SECTIONS = ['dispatch', 'flow', 'replay', 'steps', 'heap', 'sqlite', 'stores', 'telemetry', 'transaction', 'batch']
const { values: args } = parseArgs({ options: { only: { type: 'string' } } })
const only = args.only?.split(',').map((name) => name.trim())
for (const name of only ?? []) {
  if (!SECTIONS.includes(name)) throw new RangeError(`bench:tasks --only takes ${SECTIONS.join(', ')} (got ${JSON.stringify(name)})`)
}
const section = (name: string) => only === undefined || only.includes(name)

const RUNS = 10_000
const ROUNDS = 7
const DISPATCH_SIZES = [1_000, 10_000, 100_000]
const REPLAY_SIZES = [100, 1_000, 5_000]
// Rounds of every size before any is timed.
const REPLAY_WARMUP = 10
const RETAINED_SIZES = [10_000, 100_000]
const GROWTH_GOAL = 1.5
const FLOW_RUNS = 2_000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const gc = (globalThis as { gc?: () => void }).gc
const route = (name: string, POST: (ctx: TaskContext<any>) => unknown): RuntimeApiRoute => ({
  path: `/api/${name}`,
  module: { kind: 'task', POST },
})

/**
 * Milliseconds of garbage collection so far (`PerformanceObserver` 'gc'
 * entries). Node queues an entry once its collection ends and hands it to
 * observers a while later; `takeRecords()` after one turn has every entry
 * queued by then.
 */
let gcMs = 0
const collections = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration
})
collections.observe({ entryTypes: ['gc'] })
async function collectorMs(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve))
  for (const entry of collections.takeRecords()) gcMs += entry.duration
  return gcMs
}

function report(label: string, value: string, goal: string, ok: boolean): void {
  console.log(`${label.padEnd(46)} ${value.padStart(16)}   goal ${goal.padEnd(14)} ${ok ? 'ok' : 'MISSED'}`)
}

/** The cost per item at the largest size as a ratio to the smallest, against the growth goal. */
function growth(label: string, sizes: number[], msPerItem: number[]): void {
  const ratio = msPerItem[msPerItem.length - 1] / msPerItem[0]
  report(
    `  ${label}, cost per item ${sizes[sizes.length - 1].toLocaleString('en')} / ${sizes[0].toLocaleString('en')}`,
    `${ratio.toFixed(2)} x`,
    `<= ${GROWTH_GOAL} x`,
    ratio <= GROWTH_GOAL,
  )
}

/**
 * Triggers `count` no-op runs and waits for all of them to complete: all
 * at once, or with at most `inFlight` of them triggered and not yet
 * finished at any time.
 */
async function dispatchRound(
  store?: RunStore,
  handler: (ctx: TaskContext<any>) => unknown = () => undefined,
  count = RUNS,
  inFlight = count,
  telemetry?: Telemetry,
): Promise<number> {
  const rt = createTaskRuntime({
    routes: [route('noop', handler)],
    store: store ?? new MemoryRunStore({ maxRuns: Math.max(count, RUNS) }),
    logger: quiet,
    env: {},
    telemetry,
  })
  const collected = await collectorMs()
  const start = performance.now()
  if (inFlight >= count) {
    const runs = await Promise.all(Array.from({ length: count }, () => rt.trigger('noop')))
    await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
  } else {
    let triggered = 0
    const lane = async () => {
      while (triggered < count) {
        triggered++
        await rt.waitForRun((await rt.trigger('noop')).id)
      }
    }
    await Promise.all(Array.from({ length: inFlight }, lane))
  }
  const elapsed = performance.now() - start
  lastCollectorShare = ((await collectorMs()) - collected) / elapsed
  await rt.close()
  return elapsed
}
/** The share of the last `dispatchRound` that the garbage collector took. */
let lastCollectorShare = 0

/**
 * The heap each run holds while in flight: `count` runs triggered at once
 * whose handler awaits a promise the benchmark holds, each with a
 * `waitForRun` waiter, and nothing else of theirs kept by the benchmark.
 */
async function inFlightHeap(count: number): Promise<number> {
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:tasks does)')
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const rt = createTaskRuntime({
    routes: [route('held', () => gate)],
    store: new MemoryRunStore({ maxRuns: count }),
    logger: quiet,
    env: {},
  })
  gc()
  const before = process.memoryUsage().heapUsed
  let runs: RunRecord[] | undefined = await Promise.all(Array.from({ length: count }, () => rt.trigger('held')))
  const waits = runs.map((run) => rt.waitForRun(run.id))
  runs = undefined
  gc()
  const held = (process.memoryUsage().heapUsed - before) / count
  release()
  const done = await Promise.all(waits)
  if (done.some((run) => run.status !== 'completed')) throw new Error('a held run did not complete')
  await rt.close()
  return held
}

/** A running run whose `stepCount` steps are already recorded, re-dispatched through recover(). */
async function replayRound(stepCount: number): Promise<number> {
  const store = new MemoryRunStore()
  const rt = createTaskRuntime({
    routes: [
      route('replay', async (ctx) => {
        let sum = 0
        for (let i = 0; i < stepCount; i++) sum += await ctx.step.run(`step-${i}`, () => i)
        return sum
      }),
    ],
    store,
    logger: quiet,
    env: {},
  })
  const steps: Record<string, StepRecord> = {}
  for (let i = 0; i < stepCount; i++) steps[`step-${i}`] = { status: 'completed', output: i }
  const now = new Date().toISOString()
  const run: RunRecord = {
    id: crypto.randomUUID(),
    taskName: 'replay',
    status: 'running',
    trigger: 'manual',
    input: undefined,
    ok: true,
    attempts: [],
    steps,
    createdAt: now,
    startedAt: now,
  }
  await store.createRun(run)
  const start = performance.now()
  await rt.recover()
  const done = await rt.waitForRun(run.id)
  const elapsed = performance.now() - start
  if (done.result !== (stepCount * (stepCount - 1)) / 2) throw new Error(`replay returned ${String(done.result)}`)
  await rt.close()
  return elapsed
}

/** Heap held by a store that retains `RUNS` finished runs with small inputs and results. */
async function retainedHeap(): Promise<number> {
  if (!gc) throw new Error('run with node --expose-gc (npm run bench:tasks does)')
  gc()
  const before = process.memoryUsage().heapUsed
  const store = new MemoryRunStore({ maxRuns: RUNS })
  const rt = createTaskRuntime({
    routes: [route('report', (ctx) => ({ rows: ctx.input.n, ok: true }))],
    store,
    logger: quiet,
    env: {},
  })
  const runs = await Promise.all(Array.from({ length: RUNS }, (_, n) => rt.trigger('report', { n })))
  await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
  await rt.close()
  runs.length = 0
  gc()
  const after = process.memoryUsage().heapUsed
  const size = await store.size()
  if (size !== RUNS) throw new Error(`expected ${RUNS} retained runs, found ${size}`)
  return (after - before) / 1024 / 1024
}

console.log(`task runtime benchmark, Node ${process.version}\n`)

/** Database files made so far: each round opens a new one. */
let files = 0

if (section('dispatch')) {
  const dispatchPerRun: number[] = []
  for (const size of DISPATCH_SIZES) {
    const rounds = size >= 100_000 ? 3 : ROUNDS
    // Warm-up: at least 50,000 runs, so that the JIT and the heap's young
    // generation have settled (the first rounds of a process run at about half
    // speed while V8 grows its semi-spaces).
    for (let run = 0; run < 50_000; run += size) await dispatchRound(undefined, undefined, size)
    const times: number[] = []
    const shares: number[] = []
    for (let i = 0; i < rounds; i++) {
      times.push(await dispatchRound(undefined, undefined, size))
      shares.push(lastCollectorShare)
    }
    const ms = median(times)
    const rate = (size / ms) * 1000
    dispatchPerRun.push(ms / size)
    const label = `dispatch ${size.toLocaleString('en')} no-op runs (median of ${rounds})`
    const collector = `collector ${Math.round(median(shares) * 100)}%`
    if (size === RUNS) {
      report(label, `${Math.round(rate).toLocaleString('en')} runs/s`, '>= 100,000/s', rate >= 100_000)
      console.log(`${''.padEnd(46)} ${collector.padStart(16)}`)
    } else {
      console.log(`${label.padEnd(46)} ${`${Math.round(rate).toLocaleString('en')} runs/s`.padStart(16)}   ${collector}`)
    }
  }
  growth('dispatch at once', DISPATCH_SIZES, dispatchPerRun)

  // The same 100,000 runs with at most 1,000 in flight: the store still ends
  // up retaining all of them, so against 1,000 at once this figure grows
  // only with the number of runs, and the line above adds the growth with
  // the number in flight at once.
  const WINDOW = 1_000
  const windowed = DISPATCH_SIZES.at(-1)!
  {
    await dispatchRound(undefined, undefined, windowed, WINDOW) // warm-up
    const times: number[] = []
    const shares: number[] = []
    for (let i = 0; i < 3; i++) {
      times.push(await dispatchRound(undefined, undefined, windowed, WINDOW))
      shares.push(lastCollectorShare)
    }
    const ms = median(times)
    console.log(
      `${`dispatch ${windowed.toLocaleString('en')}, ${WINDOW.toLocaleString('en')} in flight (median of 3)`.padEnd(46)} ${`${Math.round((windowed / ms) * 1000).toLocaleString('en')} runs/s`.padStart(16)}   collector ${Math.round(median(shares) * 100)}%; all retained: grows with runs, not with runs at once`,
    )
    const ratio = ms / windowed / dispatchPerRun[0]
    report(
      `  ${WINDOW.toLocaleString('en')} in flight, cost per run / ${DISPATCH_SIZES[0].toLocaleString('en')} at once`,
      `${ratio.toFixed(2)} x`,
      `<= ${GROWTH_GOAL} x`,
      ratio <= GROWTH_GOAL,
    )
  }
  {
    // The same sizes through a bare dispatch loop (bench/_bare-dispatch.ts):
    // how much the machine alone makes a run cost more as runs grow.
    for (let i = 0; i < 5; i++) await bareDispatch(50_000)
    const small: number[] = []
    const atOnce: number[] = []
    const inFlight: number[] = []
    const shares: number[] = []
    for (let i = 0; i < 5; i++) {
      small.push(await bareDispatch(DISPATCH_SIZES[0]))
      const collected = await collectorMs()
      atOnce.push(await bareDispatch(windowed))
      shares.push(((await collectorMs()) - collected) / ((atOnce.at(-1)! * windowed) / 1000))
      inFlight.push(await bareDispatch(windowed, WINDOW))
    }
    console.log(
      `${`  bare dispatch loop, ${windowed.toLocaleString('en')} / ${DISPATCH_SIZES[0].toLocaleString('en')}: at once, in flight`.padEnd(46)} ${`${(median(atOnce) / median(small)).toFixed(2)} x`.padStart(16)}   ${(median(inFlight) / median(small)).toFixed(2)} x: the floor the machine sets (a record in a Map, a promise, a read)`,
    )
    const bareGrowth = median(atOnce) / median(small)
    const svcGrowth = dispatchPerRun.at(-1)! / dispatchPerRun[0]
    console.log(
      `${"  svc growth at once ÷ the bare loop's".padEnd(46)} ${`${(svcGrowth / bareGrowth).toFixed(2)} x`.padStart(16)}   the bare loop's collector at ${windowed.toLocaleString('en')} at once: ${Math.round(median(shares) * 100)}%`,
    )
  }
  {
    await inFlightHeap(10_000) // warm-up
    const bytes: number[] = []
    for (let i = 0; i < 3; i++) bytes.push(await inFlightHeap(windowed))
    console.log(
      `${`heap per run, ${windowed.toLocaleString('en')} runs in flight (median)`.padEnd(46)} ${`${Math.round(median(bytes)).toLocaleString('en')} bytes`.padStart(16)}   a held run with its waiter`,
    )
  }
}

/** `FLOW_RUNS` no-op runs of a task with flow control, all triggered at once, each with its own `input.i`. */
async function flowRound(config: Record<string, unknown>): Promise<number> {
  const rt = createTaskRuntime({
    routes: [{ path: '/api/limited', module: { route: { kind: 'task', ...config }, POST: () => undefined } }],
    store: new MemoryRunStore({ maxRuns: FLOW_RUNS }),
    logger: quiet,
    env: {},
  })
  const start = performance.now()
  const runs = await Promise.all(Array.from({ length: FLOW_RUNS }, (_, i) => rt.trigger('limited', { i })))
  await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
  const elapsed = performance.now() - start
  await rt.close()
  return elapsed
}

// Flow control on the memory store, as a ratio to the same runs without limits.
if (section('flow')) {
  for (const [label, config] of [
    ['concurrency 10', { concurrency: 10 }],
    ['concurrency 1 per input.i', { concurrency: { limit: 1, key: 'input.i' } }],
  ] as const) {
    await flowRound(config)
    const ratios: number[] = []
    for (let i = 0; i < 3; i++) ratios.push((await flowRound(config)) / (await flowRound({})))
    console.log(
      `${`dispatch ${FLOW_RUNS.toLocaleString('en')} runs at once, ${label}`.padEnd(46)} ${`${median(ratios).toFixed(2)} x`.padStart(16)}   the time of unlimited runs`,
    )
  }
}

if (section('replay')) {
  // Every size is warmed up, then the sizes take turns round by round: each
  // is timed with the code equally optimized, so the smallest size is not
  // measured before the JIT has caught up with the others.
  const times: number[][] = REPLAY_SIZES.map(() => [])
  for (let i = 0; i < REPLAY_WARMUP; i++) for (const steps of REPLAY_SIZES) await replayRound(steps)
  for (let i = 0; i < ROUNDS * 3; i++) for (const [s, steps] of REPLAY_SIZES.entries()) times[s].push(await replayRound(steps))
  const replayPerStep: number[] = []
  for (const [s, steps] of REPLAY_SIZES.entries()) {
    const ms = median(times[s])
    replayPerStep.push(ms / steps)
    const label = `replay a run of ${steps.toLocaleString('en')} completed steps (median)`
    if (steps === 1_000) report(label, `${ms.toFixed(2)} ms`, '<= 10 ms', ms <= 10)
    else console.log(`${label.padEnd(46)} ${`${ms.toFixed(2)} ms`.padStart(16)}`)
  }
  growth('replay', REPLAY_SIZES, replayPerStep)
}

if (section('steps')) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-steps-'))
  try {
    for (const kind of ['memory', 'sqlite'] as const) {
      const measure = async (steps: number) => {
        const store = kind === 'memory' ? new MemoryRunStore() : new SqliteRunStore({ path: join(dir, `steps-${++files}.db`) })
        try {
          return await recordSteps(store, steps)
        } finally {
          if (store instanceof SqliteRunStore) await store.close()
        }
      }
      await measure(100) // warm-up
      // Rounds alternate the sizes, so that a slower minute moves all three.
      const times: number[][] = REPLAY_SIZES.map(() => [])
      for (let round = 0; round < 3; round++) {
        for (const [i, steps] of REPLAY_SIZES.entries()) times[i].push(await measure(steps))
      }
      const perStep = times.map(median)
      for (const [i, steps] of REPLAY_SIZES.entries()) {
        console.log(
          `${`${kind} store, record a run of ${steps.toLocaleString('en')} steps`.padEnd(46)} ${`${(perStep[i] * 1000).toFixed(1)} µs`.padStart(16)}   a step, median of 3${kind === 'sqlite' ? ' (each step waits for its commit)' : ''}`,
        )
      }
      growth(`${kind}: recording steps`, REPLAY_SIZES, perStep)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (section('heap')) {
  const heapMb = await retainedHeap()
  report(`heap of ${RUNS.toLocaleString('en')} retained finished runs`, `${heapMb.toFixed(1)} MB`, '<= 50 MB', heapMb <= 50)
}

if (section('sqlite')) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-tasks-'))
  /** One round on a fresh database file, so every round starts from the same size. */
  async function sqliteRound(handler?: (ctx: TaskContext<any>) => unknown): Promise<number> {
    const store = new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), maxRuns: RUNS })
    try {
      return await dispatchRound(store, handler)
    } finally {
      await store.close()
    }
  }
  const threeSteps = async (ctx: TaskContext<any>) => {
    for (const key of ['a', 'b', 'c']) await ctx.step.run(key, () => key)
  }
  const SQLITE_ROUNDS = 7
  try {
    for (const [label, handler, steps, goal] of [
      ['no-op', undefined, 0, 0.5],
      ['three step.run', threeSteps, 3, 0.25],
    ] as const) {
      // Warm-up: two rounds, the first of which also compiles the store's code.
      for (let i = 0; i < 2; i++) await sqliteRound(handler)
      sqliteFloor(dir, `floor-${++files}`, RUNS, steps)
      // Each SQLite round is paired with a memory dispatch round run right
      // before it and the floor right after, so a machine that gets busier
      // partway through moves all three.
      const rounds: number[] = []
      const ratios: number[] = []
      const floors: number[] = []
      const floorRatios: number[] = []
      const bounds: number[] = []
      const aboveFloor: number[] = []
      const per100: number[] = []
      for (let i = 0; i < SQLITE_ROUNDS; i++) {
        const memory = await dispatchRound()
        // The same runs on the memory store: the engine's own work for them.
        const same = handler ? await dispatchRound(undefined, handler) : memory
        const sqlite = await sqliteRound(handler)
        const floor = sqliteFloor(dir, `floor-${++files}`, RUNS, steps)
        const floor100 = sqliteFloor(dir, `floor-${++files}`, RUNS, steps, 100)
        per100.push(floor100 / sqlite)
        rounds.push(sqlite)
        ratios.push(memory / sqlite)
        floors.push(floor)
        floorRatios.push(memory / floor)
        bounds.push(memory / (same + floor))
        aboveFloor.push(sqlite / floor)
      }
      const rate = (RUNS / median(rounds)) * 1000
      const ratio = median(ratios)
      console.log(
        `${`SqliteRunStore, ${label} runs (median of ${SQLITE_ROUNDS})`.padEnd(46)} ${`${Math.round(rate).toLocaleString('en')} runs/s`.padStart(16)}`,
      )
      report(`  ratio to memory dispatch, paired rounds`, `${ratio.toFixed(2)} x`, `>= ${goal} x`, ratio >= goal)
      console.log(
        `${'  its writes alone through node:sqlite'.padEnd(46)} ${`${((median(floors) / RUNS) * 1000).toFixed(1)} µs`.padStart(16)}   a run: the floor under any store on this file`,
      )
      console.log(
        `${'  memory dispatch ÷ that floor, paired'.padEnd(46)} ${`${median(floorRatios).toFixed(2)} x`.padStart(16)}   the ratio's bound were the writes to overlap all the engine's work`,
      )
      console.log(
        `${'  memory ÷ (same runs in memory + floor)'.padEnd(46)} ${`${median(bounds).toFixed(2)} x`.padStart(16)}   its bound with the engine's work and the writes on one thread`,
      )
      console.log(
        `${'  SqliteRunStore ÷ that floor, paired'.padEnd(46)} ${`${median(aboveFloor).toFixed(2)} x`.padStart(16)}   the time of the bare writes`,
      )
      // Runs/s over the floor's runs/s: the floor's time over the store's.
      const perHundred = `${median(per100).toFixed(2)} x`
      const label100 = '  runs/s ÷ the writes with a commit per 100 runs'
      if (steps === 0) report(label100, perHundred, '>= 0.8 x', median(per100) >= 0.8)
      else console.log(`${label100.padEnd(46)} ${perHundred.padStart(16)}`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * A finished run as a store retains it, for filling a store without running
 * anything. Its id comes from the generator the engine uses, so a store's
 * indexes see the same keys as in production.
 */
if (section('stores')) {
  function finishedRun(n: number): RunRecord {
    const now = new Date().toISOString()
    return {
      id: newRunId(),
      taskName: 'noop',
      status: 'completed',
      trigger: 'manual',
      input: { n },
      ok: true,
      result: { n },
      attempts: [{ index: 1, startedAt: now, durationMs: 0 }],
      steps: {},
      createdAt: now,
      startedAt: now,
      finishedAt: now,
    }
  }

  const BATCH = 2_000
  const retainedDir = mkdtempSync(join(tmpdir(), 'svc-bench-retained-'))
  /**
   * A store at its bound of `retained` finished runs: the time per run of
   * dispatching `BATCH` more (each evicts the oldest) and of reading `BATCH`
   * retained runs by id.
   */
  async function retainedRound(kind: 'memory' | 'sqlite', retained: number): Promise<{ dispatch: number; read: number }> {
    const store =
      kind === 'memory'
        ? new MemoryRunStore({ maxRuns: retained })
        : new SqliteRunStore({ path: join(retainedDir, `retained-${retained}-${++files}.db`), maxRuns: retained })
    try {
      const ids: string[] = []
      for (let from = 0; from < retained; from += 10_000) {
        const runs = Array.from({ length: Math.min(10_000, retained - from) }, (_, i) => finishedRun(from + i))
        await Promise.all(runs.map((run) => store.createRun(run)))
        for (const run of runs) ids.push(run.id)
      }
      await dispatchRound(store, undefined, BATCH) // warm-up, at the bound from here on
      const dispatch = await dispatchRound(store, undefined, BATCH)
      // The newest ids: the runs dispatched above evicted the oldest.
      const live = ids.slice(2 * BATCH)
      const start = performance.now()
      for (let i = 0; i < BATCH; i++) {
        if (!(await store.getRun(live[(i * 7919) % live.length]))) throw new Error(`a retained run is missing from the ${kind} store`)
      }
      const read = performance.now() - start
      return { dispatch: dispatch / BATCH, read: read / BATCH }
    } finally {
      if (store instanceof SqliteRunStore) await store.close()
    }
  }

  /**
   * The floor under a memory store read: `Map.get` of a retained record by id
   * in a Map of `retained` records, the same ids in the same order, with the
   * same await per read and nothing else. What grows here between sizes is the
   * machine's caches missing, not the store's work.
   */
  async function bareLookup(retained: number): Promise<number> {
    const records = new Map<string, RunRecord>()
    const ids: string[] = []
    for (let i = 0; i < retained; i++) {
      const run = finishedRun(i)
      records.set(run.id, run)
      ids.push(run.id)
    }
    const live = ids.slice(2 * BATCH)
    const get = async (id: string) => records.get(id)
    const start = performance.now()
    for (let i = 0; i < BATCH; i++) {
      if (!(await get(live[(i * 7919) % live.length]))) throw new Error('a record is missing')
    }
    return (performance.now() - start) / BATCH
  }

  const bare: number[] = []
  for (const retained of RETAINED_SIZES) {
    const rounds: number[] = []
    for (let i = 0; i < 3; i++) rounds.push(await bareLookup(retained))
    bare.push(median(rounds))
    console.log(
      `${`Map.get alone, ${retained.toLocaleString('en')} records`.padEnd(46)} ${`${(bare.at(-1)! * 1000).toFixed(2)} µs`.padStart(16)}   per read: the floor under a memory store read`,
    )
  }
  console.log(
    `${`  Map.get alone, cost per item ${RETAINED_SIZES.at(-1)!.toLocaleString('en')} / ${RETAINED_SIZES[0].toLocaleString('en')}`.padEnd(46)} ${`${(bare.at(-1)! / bare[0]).toFixed(2)} x`.padStart(16)}   for reference`,
  )

  try {
    for (const kind of ['memory', 'sqlite'] as const) {
      const dispatch: number[] = []
      const read: number[] = []
      for (const retained of RETAINED_SIZES) {
        const rounds: { dispatch: number; read: number }[] = []
        for (let i = 0; i < 3; i++) rounds.push(await retainedRound(kind, retained))
        dispatch.push(median(rounds.map((r) => r.dispatch)))
        read.push(median(rounds.map((r) => r.read)))
        console.log(
          `${`${kind} store, ${retained.toLocaleString('en')} retained: dispatch, read`.padEnd(46)} ${`${(dispatch.at(-1)! * 1000).toFixed(1)} µs`.padStart(16)}   ${(read.at(-1)! * 1000).toFixed(1)} µs per run`,
        )
      }
      growth(`${kind} store dispatch`, RETAINED_SIZES, dispatch)
      growth(`${kind} store read`, RETAINED_SIZES, read)
    }
  } finally {
    rmSync(retainedDir, { recursive: true, force: true })
  }
}

// The cost of tracing: runs of three steps on the memory store, with the
// OpenTelemetry API and no SDK, then with the SDK and exporters that drop
// everything, each as a ratio to the same runs without telemetry, rounds
// taking turns. Then where the time of the last goes.
if (section('telemetry')) {
  const TRACED_RUNS = 5_000
  const threeSteps = async (ctx: TaskContext) => {
    await ctx.step.run('a', () => 1)
    await ctx.step.run('b', () => 2)
    await ctx.step.run('c', () => 3)
  }
  const round = (telemetry?: Telemetry) => dispatchRound(undefined, threeSteps, TRACED_RUNS, 100, telemetry)
  const compare = async (label: string, goal: number | undefined) => {
    const telemetry = otelTelemetry(otelApi)
    for (let i = 0; i < 2; i++) await round(telemetry), await round()
    // Pairs in alternating order: a round after another runs faster or slower
    // with the heap the other left, whichever the two are.
    const ratios: number[] = []
    for (let i = 0; i < 2 * ROUNDS + 1; i++) {
      const [traced, bare] = i % 2 === 0 ? [await round(telemetry), await round()] : [await round(), await round(telemetry)].reverse()
      ratios.push(traced / bare)
    }
    const ratio = median(ratios)
    if (goal === undefined) {
      console.log(`${label.padEnd(46)} ${`${ratio.toFixed(2)} x`.padStart(16)}   the time without telemetry`)
    } else report(label, `${ratio.toFixed(2)} x`, `<= ${goal} x`, ratio <= goal)
    return telemetry
  }
  await compare(`${TRACED_RUNS.toLocaleString('en')} runs of 3 steps, API and no SDK`, 1.03)
  const unregister = registerDroppingSdk()
  try {
    const telemetry = await compare(`${TRACED_RUNS.toLocaleString('en')} runs of 3 steps, SDK, dropping exporter`, undefined)
    console.log('  where its time goes (self time, top functions):')
    for (const [share, name] of await profileOf(() => round(telemetry))) {
      console.log(`    ${`${(share * 100).toFixed(1)} %`.padStart(7)}  ${name}`)
    }
  } finally {
    await unregister()
  }
}

// Transactional steps (docs/tasks.md "Effects exactly once: transactional
// steps") on a SQLite file with its durable settings: runs whose one step
// writes a row of the app's, each as a ratio to the same runs whose step
// writes nothing. In a ctx.step.transaction the row and the step's record
// commit together, in the store's group commit. In a ctx.step.run through a
// connection of the app's own (another file, WAL, synchronous=FULL as the
// store's), each row commits on its own and is not exactly once: a crash
// between the row and the record writes it twice.
if (section('transaction')) {
  const TX_RUNS = 5_000
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-tx-'))
  type Kind = 'nothing' | 'transaction' | 'own connection'
  async function txRound(kind: Kind): Promise<number> {
    const path = join(dir, `runs-${++files}.db`)
    const app = new DatabaseSync(kind === 'own connection' ? join(dir, `app-${files}.db`) : path)
    app.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000')
    app.exec('CREATE TABLE items (id TEXT PRIMARY KEY)')
    const insert = app.prepare('INSERT INTO items (id) VALUES (?)')
    const store = new SqliteRunStore({ path, maxRuns: TX_RUNS })
    const handler =
      kind === 'nothing'
        ? (ctx: TaskContext) => ctx.step.run('write', () => ctx.runId)
        : kind === 'transaction'
          ? (ctx: TaskContext) =>
              ctx.step.transaction('write', (tx: SqlTransaction) => tx.run('INSERT INTO items (id) VALUES (?)', ctx.runId).changes)
          : (ctx: TaskContext) => ctx.step.run('write', () => insert.run(ctx.runId).changes)
    try {
      return await dispatchRound(store, handler, TX_RUNS)
    } finally {
      await store.close()
      app.close()
    }
  }
  try {
    const kinds: Kind[] = ['nothing', 'transaction', 'own connection']
    for (const kind of kinds) await txRound(kind) // warm-up
    const times = new Map<Kind, number[]>(kinds.map((kind) => [kind, []]))
    for (let i = 0; i < ROUNDS; i++) {
      // Rotated, so that no kind always runs first.
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(i + k) % kinds.length]
        times.get(kind)!.push(await txRound(kind))
      }
    }
    const base = median(times.get('nothing')!)
    console.log(`\n${TX_RUNS.toLocaleString('en')} runs of one step on a SQLite file, medians of ${ROUNDS} rounds`)
    for (const kind of kinds) {
      const ms = median(times.get(kind)!)
      const perSecond = Math.round((TX_RUNS / ms) * 1000)
      console.log(
        `  ${`step writes ${kind === 'nothing' ? 'nothing' : `a row, ${kind === 'transaction' ? 'ctx.step.transaction' : 'ctx.step.run + own connection'}`}`.padEnd(60)} ${`${perSecond.toLocaleString('en')} runs/s`.padStart(14)}   ${(ms / base).toFixed(2)} x the time`,
      )
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// Batch triggers on a SQLite file with its durable settings
// (bench/_trigger-batch.ts, as bench:store measures them on Postgres).
if (section('batch')) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-batch-'))
  try {
    const batch = await measureTriggerBatch(async () => {
      const store = new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), maxRuns: BATCH_RUNS })
      return { store, close: async () => store.close() }
    })
    const rate = (perSecond: number) => `${Math.round(perSecond).toLocaleString('en')} runs/s`
    console.log(`\n${BATCH_RUNS.toLocaleString('en')} runs recorded on a SQLite file, medians of 3 rounds`)
    console.log(`  ${'trigger(), one at a time'.padEnd(40)} ${rate(batch.oneByOne).padStart(16)}`)
    console.log(`  ${'triggerMany(), one batch'.padEnd(40)} ${rate(batch.batched).padStart(16)}`)
    report('triggerMany against one at a time', `${batch.ratio.toFixed(1)} x`, '>= 5 x', batch.ratio >= 5)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
