/**
 * Durable stores against their anchors (`npm run bench:store`), all on one
 * embedded Postgres that the benchmark starts and removes:
 * - svc, for the memory, SQLite (a temp file) and Postgres stores: no-op
 *   runs/s and runs/s of a run with three `step.run` (RUNS triggered
 *   together, from the first trigger to the last completion), and p50 from
 *   `trigger()` to the handler's first line (ROUNDS one at a time);
 * - graphile-worker on the same database: no-op jobs/s and p50 from `addJob`
 *   to the task starting, measured the same way (concurrency in
 *   bench/_store-anchors.ts);
 * - DBOS Transact on the same database: workflows/s of a workflow of three
 *   steps.
 * Ratios and goals: Postgres no-op runs/s ÷ graphile-worker jobs/s ≥ 1.0;
 * Postgres p50 ÷ graphile-worker p50 ≤ 1.0; Postgres three-step runs/s ÷
 * DBOS workflows/s ≥ 1.0.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'
import { SqliteRunStore } from '../src/node/sqlite-store.ts'
import { PostgresRunStore } from '../src/postgres.ts'
import { MemoryRunStore, createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store.ts'
import type { Logger, RuntimeApiRoute, TaskContext } from '../src/types.ts'
import { GRAPHILE_CONCURRENCY, measureDbos, measureGraphile } from './_store-anchors.ts'
import { startLatency, throughput } from './_store-measure.ts'

const RUNS = 2000
const ROUNDS = 200
// Every run of a round is kept, so no store evicts or fills up mid-round.
const MAX_RUNS = 100_000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

interface StoreFigures {
  noop: number
  threeSteps: number
  p50Ms: number
}

/** The three svc figures on stores made by `open`, a fresh one per measurement. */
async function measureSvc(open: (label: string) => Promise<{ store: RunStore; close(): Promise<void> }>): Promise<StoreFigures> {
  let onStart: () => void = () => {}
  const routes: RuntimeApiRoute[] = [
    { path: '/api/noop', module: { kind: 'task', POST: () => onStart() } },
    {
      path: '/api/steps',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext) => {
          for (const key of ['a', 'b', 'c']) await ctx.step.run(key, () => key)
        },
      },
    },
  ]
  const withRuntime = async <T>(label: string, body: (rt: ReturnType<typeof createTaskRuntime>) => Promise<T>): Promise<T> => {
    const { store, close } = await open(label)
    const rt = createTaskRuntime({ routes, store, logger: quiet, env: {} })
    try {
      return await body(rt)
    } finally {
      await rt.close()
      await close()
    }
  }
  const rate = (task: string) => (rt: ReturnType<typeof createTaskRuntime>) =>
    throughput(RUNS, async () => {
      const run = await rt.trigger(task)
      return () => rt.waitForRun(run.id)
    })
  await withRuntime('warm', async (rt) => {
    await throughput(200, async () => {
      const run = await rt.trigger('steps')
      return () => rt.waitForRun(run.id)
    })
  })
  const noop = await withRuntime('noop', rate('noop'))
  const threeSteps = await withRuntime('steps', rate('steps'))
  const p50Ms = await withRuntime('latency', (rt) =>
    startLatency(
      ROUNDS,
      async () => {
        const run = await rt.trigger('noop')
        return () => rt.waitForRun(run.id)
      },
      (started) => {
        onStart = started
      },
    ),
  )
  return { noop, threeSteps, p50Ms }
}

const perSecond = (value: number) => `${Math.round(value).toLocaleString('en')}/s`
const line = (label: string, value: string, ratio?: { of: number; goal: string; ok: boolean }) =>
  console.log(
    `${label.padEnd(44)} ${value.padStart(12)}${ratio ? `   ${ratio.of.toFixed(2)} x   goal ${ratio.goal.padEnd(7)} ${ratio.ok ? 'ok' : 'MISSED'}` : ''}`,
  )

console.log(`durable store benchmark, Node ${process.version}, ${RUNS.toLocaleString('en')} runs a round, p50 of ${ROUNDS} one at a time\n`)

const pg = await startEmbeddedPostgres()
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-store-'))
try {
  const memory = await measureSvc(async () => ({ store: new MemoryRunStore({ maxRuns: MAX_RUNS }), close: async () => {} }))
  const sqlite = await measureSvc(async (label) => {
    const store = new SqliteRunStore({ path: join(dir, `${label}.db`), maxRuns: MAX_RUNS })
    return { store, close: async () => store.close() }
  })
  const postgres = await measureSvc(async (label) => {
    // A schema per measurement, so each starts on empty tables.
    const store = new PostgresRunStore({ url: pg.url, schema: `svc_${label}`, maxRuns: MAX_RUNS })
    await store.ready()
    return { store, close: () => store.close() }
  })
  const graphile = await measureGraphile(pg.url, RUNS, ROUNDS)
  const dbos = await measureDbos(pg.url, RUNS)

  for (const [name, figures] of [
    ['memory', memory],
    ['SQLite', sqlite],
  ] as const) {
    line(`svc ${name}: no-op runs`, perSecond(figures.noop))
    line(`svc ${name}: three-step runs`, perSecond(figures.threeSteps))
    line(`svc ${name}: p50 trigger → start`, `${figures.p50Ms.toFixed(2)} ms`)
  }
  const noopRatio = postgres.noop / graphile.jobsPerSecond
  line('svc Postgres: no-op runs', perSecond(postgres.noop), { of: noopRatio, goal: '>= 1.0', ok: noopRatio >= 1 })
  const p50Ratio = postgres.p50Ms / graphile.p50Ms
  line('svc Postgres: p50 trigger → start', `${postgres.p50Ms.toFixed(2)} ms`, { of: p50Ratio, goal: '<= 1.0', ok: p50Ratio <= 1 })
  if (typeof dbos === 'number') {
    const stepsRatio = postgres.threeSteps / dbos
    line('svc Postgres: three-step runs', perSecond(postgres.threeSteps), { of: stepsRatio, goal: '>= 1.0', ok: stepsRatio >= 1 })
  } else {
    line('svc Postgres: three-step runs', perSecond(postgres.threeSteps))
  }
  line(`graphile-worker (concurrency ${GRAPHILE_CONCURRENCY}): no-op jobs`, perSecond(graphile.jobsPerSecond))
  line('graphile-worker: p50 addJob → start', `${graphile.p50Ms.toFixed(2)} ms`)
  if (typeof dbos === 'number') line('DBOS: three-step workflows', perSecond(dbos))
  else console.log(`DBOS: not measured (${dbos.reason})`)
} finally {
  rmSync(dir, { recursive: true, force: true })
  await pg.stop()
}
