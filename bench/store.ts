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
 *   steps;
 * - svc on Postgres recording one run of 100, 1,000 and 5,000 steps
 *   (bench/_steps-growth.ts): the time a step takes at each size, each step
 *   waiting for its commit.
 * Ratios and goals: Postgres no-op runs/s ÷ graphile-worker jobs/s ≥ 1.0;
 * Postgres p50 ÷ graphile-worker p50 ≤ 1.0; Postgres three-step runs/s ÷
 * DBOS workflows/s ≥ 1.0; a step of the 5,000-step run ÷ a step of the
 * 100-step run ≤ 1.5 (a step costs no more the more steps its run holds).
 * Events, on each store, as ratios to trigger() on the same store: events/s
 * sent with one task on the event (÷ no-op runs/s), p50 from sendEvent() to
 * the started run's first line and p50 from sendEvent() to a waiting run's
 * resumption (÷ p50 trigger → start). They have no goal yet.
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
import { percentile, startLatency, throughput } from './_store-measure.ts'
import { recordSteps } from './_steps-growth.ts'

const RUNS = 2000
const ROUNDS = 200
const STEP_SIZES = [100, 1_000, 5_000]
const STEP_GROWTH_GOAL = 1.5
// Every run of a round is kept, so no store evicts or fills up mid-round.
const MAX_RUNS = 100_000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

interface StoreFigures {
  noop: number
  threeSteps: number
  p50Ms: number
  /** Events sent per second, each starting one no-op run, from the first send to the last run's end. */
  events: number
  /** p50 from `sendEvent()` to the first line of the run it starts. */
  eventStartMs: number
  /** p50 from `sendEvent()` to the line after the `waitForEvent` of a run suspended on it. */
  eventResumeMs: number
  /** The same, with `CROWD` other runs suspended on a sleep. */
  eventResumeCrowdedMs: number
}

/** Runs suspended on a sleep beside the one a send resumes, in the crowded measurement. */
const CROWD = 5000

/** The three svc figures on stores made by `open`, a fresh one per measurement. */
async function measureSvc(open: (label: string) => Promise<{ store: RunStore; close(): Promise<void> }>): Promise<StoreFigures> {
  let onStart: () => void = () => {}
  const routes: RuntimeApiRoute[] = [
    { path: '/api/noop', module: { kind: 'task', POST: () => onStart() } },
    { path: '/api/on-event', module: { route: { kind: 'task', on: 'bench.event' }, POST: () => onStart() } },
    {
      path: '/api/waiter',
      module: {
        kind: 'task',
        POST: async (ctx: TaskContext<{ i: number }>) => {
          await ctx.step.waitForEvent('e', 'bench.resume', { match: { i: ctx.input.i } })
          onStart()
        },
      },
    },
    { path: '/api/sleeper', module: { kind: 'task', POST: (ctx: TaskContext) => ctx.step.sleep('nap', 3600) } },
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
  const sendAndWait = async (rt: ReturnType<typeof createTaskRuntime>) => {
    const sent = await rt.sendEvent('bench.event')
    return () => rt.waitForRun(sent.runs[0].id)
  }
  const events = await withRuntime('events', (rt) => throughput(RUNS, () => sendAndWait(rt)))
  const eventStartMs = await withRuntime('event_latency', (rt) =>
    startLatency(
      ROUNDS,
      () => sendAndWait(rt),
      (started) => {
        onStart = started
      },
    ),
  )
  let i = 0
  const resumeLatency = (rt: ReturnType<typeof createTaskRuntime>) =>
    startLatency(
      ROUNDS / 2,
      async () => {
        // Suspended on its wait before the clock starts: what is timed is the send and the resumption.
        const run = await rt.trigger('waiter', { i: ++i })
        while ((await rt.getRun(run.id))?.status !== 'suspended') await new Promise((resolve) => setTimeout(resolve, 1))
        return async () => {
          await rt.sendEvent('bench.resume', { i })
          await rt.waitForRun(run.id)
        }
      },
      (started) => {
        onStart = started
      },
      true,
    )
  const eventResumeMs = await withRuntime('event_resume', resumeLatency)
  const eventResumeCrowdedMs = await withRuntime('event_resume_crowded', async (rt) => {
    for (let n = 0; n < CROWD; n++) await rt.trigger('sleeper')
    const asleep = async () => (await rt.store.countRunsByTask('suspended')).find((count) => count.taskName === 'sleeper')?.count ?? 0
    while ((await asleep()) < CROWD) await new Promise((resolve) => setTimeout(resolve, 20))
    return resumeLatency(rt)
  })
  return { noop, threeSteps, p50Ms, events, eventStartMs, eventResumeMs, eventResumeCrowdedMs }
}

/** Median milliseconds a step at each of STEP_SIZES, a fresh schema per run; rounds alternate the sizes, so that a slower minute moves all three. */
async function measureSteps(url: string): Promise<number[]> {
  let schemas = 0
  const measure = async (steps: number) => {
    const store = new PostgresRunStore({ url, schema: `svc_steps_${++schemas}` })
    try {
      // The schema made and the connection and its statements ready, outside the time.
      await recordSteps(store, 10)
      return await recordSteps(store, steps)
    } finally {
      await store.close()
    }
  }
  await measure(100) // warm-up
  const times: number[][] = STEP_SIZES.map(() => [])
  for (let round = 0; round < 3; round++) {
    for (const [i, steps] of STEP_SIZES.entries()) times[i].push(await measure(steps))
  }
  return times.map((values) => percentile(values, 0.5))
}

const perSecond = (value: number) => `${Math.round(value).toLocaleString('en')}/s`
const line = (label: string, value: string, ratio?: { of: number; goal?: string; ok?: boolean }) =>
  console.log(
    `${label.padEnd(44)} ${value.padStart(12)}${ratio ? `   ${ratio.of.toFixed(2)} x` : ''}${ratio?.goal ? `   goal ${ratio.goal.padEnd(7)} ${ratio.ok ? 'ok' : 'MISSED'}` : ''}`,
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
  const stepMs = await measureSteps(pg.url)

  for (const [name, figures] of [
    ['memory', memory],
    ['SQLite', sqlite],
  ] as const) {
    line(`svc ${name}: no-op runs`, perSecond(figures.noop))
    line(`svc ${name}: three-step runs`, perSecond(figures.threeSteps))
    line(`svc ${name}: p50 trigger → start`, `${figures.p50Ms.toFixed(2)} ms`)
  }
  // Events on each store, as ratios to trigger() on the same store in the same run.
  for (const [name, figures] of [
    ['memory', memory],
    ['SQLite', sqlite],
    ['Postgres', postgres],
  ] as const) {
    line(`svc ${name}: events sent (one task on it)`, perSecond(figures.events), { of: figures.events / figures.noop })
    line(`svc ${name}: p50 sendEvent → run start`, `${figures.eventStartMs.toFixed(2)} ms`, {
      of: figures.eventStartMs / figures.p50Ms,
    })
    line(`svc ${name}: p50 sendEvent → wait resumed`, `${figures.eventResumeMs.toFixed(2)} ms`, {
      of: figures.eventResumeMs / figures.p50Ms,
    })
    line(`svc ${name}: the same, ${CROWD} other runs asleep`, `${figures.eventResumeCrowdedMs.toFixed(2)} ms`, {
      of: figures.eventResumeCrowdedMs / figures.eventResumeMs,
    })
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
  // The largest size prints its step as a ratio to a step of the smallest.
  const stepGrowth = stepMs[stepMs.length - 1] / stepMs[0]
  for (const [i, steps] of STEP_SIZES.entries()) {
    const ratio =
      i === STEP_SIZES.length - 1 ? { of: stepGrowth, goal: `<= ${STEP_GROWTH_GOAL}`, ok: stepGrowth <= STEP_GROWTH_GOAL } : undefined
    line(`svc Postgres: a step of a ${steps.toLocaleString('en')}-step run`, `${(stepMs[i] * 1000).toFixed(0)} µs`, ratio)
  }
  line(`graphile-worker (concurrency ${GRAPHILE_CONCURRENCY}): no-op jobs`, perSecond(graphile.jobsPerSecond))
  line('graphile-worker: p50 addJob → start', `${graphile.p50Ms.toFixed(2)} ms`)
  if (typeof dbos === 'number') line('DBOS: three-step workflows', perSecond(dbos))
  else console.log(`DBOS: not measured (${dbos.reason})`)
} finally {
  rmSync(dir, { recursive: true, force: true })
  await pg.stop()
}
