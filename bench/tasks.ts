/**
 * Task runtime benchmark (`npm run bench:tasks`, which runs Node with
 * --expose-gc). Reports, each next to its goal:
 * - in-process dispatch of 10,000 no-op runs, from trigger to completed
 *   (median of several rounds after a warm-up): at least 50,000 runs/s;
 * - replay of a run with 1,000 completed steps, from re-dispatch to
 *   completed (median): at most 10 ms;
 * - heap held by 10,000 retained finished runs in the memory store: at
 *   most 50 MB;
 * - the same dispatch on a `SqliteRunStore` file (WAL, synchronous=FULL),
 *   with no-op runs and with runs of three `step.run`, each as a ratio to
 *   the memory dispatch measured above in this process: at least 0.5 and
 *   0.25.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteRunStore } from '../src/node/sqlite-store.ts'
import { MemoryRunStore, createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store.ts'
import type { Logger, RunRecord, RuntimeApiRoute, StepRecord, TaskContext } from '../src/types.ts'

const RUNS = 10_000
const STEPS = 1_000
const ROUNDS = 7

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const gc = (globalThis as { gc?: () => void }).gc
const route = (name: string, POST: (ctx: TaskContext<any>) => unknown): RuntimeApiRoute => ({
  path: `/api/${name}`,
  module: { kind: 'task', POST },
})

function report(label: string, value: string, goal: string, ok: boolean): void {
  console.log(`${label.padEnd(46)} ${value.padStart(16)}   goal ${goal.padEnd(14)} ${ok ? 'ok' : 'MISSED'}`)
}

/** Triggers `RUNS` no-op runs and waits for all of them to complete. */
async function dispatchRound(store?: RunStore, handler: (ctx: TaskContext<any>) => unknown = () => undefined): Promise<number> {
  const rt = createTaskRuntime({ routes: [route('noop', handler)], store, logger: quiet, env: {} })
  const start = performance.now()
  const runs = await Promise.all(Array.from({ length: RUNS }, () => rt.trigger('noop')))
  await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
  const elapsed = performance.now() - start
  await rt.close()
  return elapsed
}

/** A running run whose 1,000 steps are already recorded, re-dispatched through recover(). */
async function replayRound(): Promise<number> {
  const store = new MemoryRunStore()
  const rt = createTaskRuntime({
    routes: [
      route('replay', async (ctx) => {
        let sum = 0
        for (let i = 0; i < STEPS; i++) sum += await ctx.step.run(`step-${i}`, () => i)
        return sum
      }),
    ],
    store,
    logger: quiet,
    env: {},
  })
  const steps: Record<string, StepRecord> = {}
  for (let i = 0; i < STEPS; i++) steps[`step-${i}`] = { status: 'completed', output: i }
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
  if (done.result !== (STEPS * (STEPS - 1)) / 2) throw new Error(`replay returned ${String(done.result)}`)
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
  if (store.size !== RUNS) throw new Error(`expected ${RUNS} retained runs, found ${store.size}`)
  return (after - before) / 1024 / 1024
}

console.log(`task runtime benchmark, Node ${process.version}\n`)

await dispatchRound() // warm-up
const dispatch: number[] = []
for (let i = 0; i < ROUNDS; i++) dispatch.push(await dispatchRound())
const dispatchMs = median(dispatch)
const perSecond = (RUNS / dispatchMs) * 1000
report(
  `dispatch ${RUNS.toLocaleString('en')} no-op runs (median of ${ROUNDS})`,
  `${Math.round(perSecond).toLocaleString('en')} runs/s`,
  '>= 50,000/s',
  perSecond >= 50_000,
)
console.log(`${''.padEnd(46)} ${`${dispatchMs.toFixed(1)} ms`.padStart(16)}`)

await replayRound() // warm-up
const replay: number[] = []
for (let i = 0; i < ROUNDS * 3; i++) replay.push(await replayRound())
const replayMs = median(replay)
report(`replay a run of ${STEPS.toLocaleString('en')} completed steps (median)`, `${replayMs.toFixed(2)} ms`, '<= 10 ms', replayMs <= 10)

const heapMb = await retainedHeap()
report(`heap of ${RUNS.toLocaleString('en')} retained finished runs`, `${heapMb.toFixed(1)} MB`, '<= 50 MB', heapMb <= 50)

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-tasks-'))
let files = 0
/** One round on a fresh database file, so every round starts from the same size. */
async function sqliteRound(handler?: (ctx: TaskContext<any>) => unknown): Promise<number> {
  const store = new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), maxRuns: RUNS })
  try {
    return await dispatchRound(store, handler)
  } finally {
    store.close()
  }
}
const threeSteps = async (ctx: TaskContext<any>) => {
  for (const key of ['a', 'b', 'c']) await ctx.step.run(key, () => key)
}
const SQLITE_ROUNDS = 5
try {
  for (const [label, handler, goal] of [
    ['no-op', undefined, 0.5],
    ['three step.run', threeSteps, 0.25],
  ] as const) {
    await sqliteRound(handler) // warm-up
    const rounds: number[] = []
    for (let i = 0; i < SQLITE_ROUNDS; i++) rounds.push(await sqliteRound(handler))
    const rate = (RUNS / median(rounds)) * 1000
    const ratio = rate / perSecond
    console.log(
      `${`SqliteRunStore, ${label} runs (median of ${SQLITE_ROUNDS})`.padEnd(46)} ${`${Math.round(rate).toLocaleString('en')} runs/s`.padStart(16)}`,
    )
    report(`  ratio to memory dispatch`, `${ratio.toFixed(2)} x`, `>= ${goal} x`, ratio >= goal)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
