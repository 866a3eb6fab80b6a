/**
 * Durable stores against their anchors (`npm run bench:store`), all on one
 * embedded Postgres that the benchmark starts with its durable defaults
 * (fsync on, synchronous_commit on) and removes:
 * - svc, for the memory, SQLite (a temp file) and Postgres stores: no-op
 *   runs/s and runs/s of a run with three `step.run` (RUNS triggered
 *   together, from the first trigger to the last completion), and p50 from
 *   `trigger()` to the handler's first line (ROUNDS one at a time);
 * - on Postgres, in RATE_ROUNDS rounds that take turns, medians: svc's two
 *   rates; the floor (bench/_postgres-floor.ts: per job one INSERT and one
 *   UPDATE, each its own commit, over 24 connections); graphile-worker on
 *   the same database, no-op jobs/s, at its defaults and as its own
 *   perfTest tunes it (bench/_store-anchors.ts), with its p50 from `addJob`
 *   to the task starting, measured as svc's;
 * - DBOS Transact on the same database: workflows/s of a workflow of three
 *   steps;
 * - `triggerMany` of 10,000 delayed runs on Postgres against the same runs
 *   triggered one at a time (bench/_trigger-batch.ts);
 * - svc on Postgres recording one run of 100, 1,000 and 5,000 steps
 *   (bench/_steps-growth.ts): the time a step takes at each size, each step
 *   waiting for its commit.
 * Goals, as ratios printed in the same run: Postgres no-op runs/s ≥ 0.5 ×
 * the floor and ≥ 2 × graphile-worker tuned; three-step runs/s ≥ 0.5 ×
 * no-op runs/s; p50 trigger → start ≤ graphile-worker's (the faster of its
 * two settings); triggerMany ≥ 5 × one at a time; three-step runs/s ≥ DBOS
 * workflows/s; a step of the 5,000-step run ÷ a step of the 100-step run
 * ≤ 1.5 (a step costs no more the more steps its run holds).
 * Events, on each store, as ratios to trigger() on the same store: events/s
 * sent with one task on the event (÷ no-op runs/s), p50 from sendEvent() to
 * the started run's first line and p50 from sendEvent() to a waiting run's
 * resumption (÷ p50 trigger → start). They have no goal yet.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'
import { SqliteRunStore } from '../src/sqlite/store.ts'
import { PostgresRunStore } from '../src/postgres.ts'
import { MemoryRunStore, createTaskRuntime } from '../src/runtime/tasks/index.ts'
import type { RunStore } from '../src/runtime/tasks/store/store.ts'
import type { Logger, RuntimeApiRoute, TaskContext } from '../src/types.ts'
import { FLOOR_CONNECTIONS, postgresFloor } from './_postgres-floor.ts'
import { GRAPHILE_TUNINGS, type GraphileTuning, measureDbos, startGraphile } from './_store-anchors.ts'
import { percentile, startLatency, throughput } from './_store-measure.ts'
import { recordSteps } from './_steps-growth.ts'
import { BATCH_RUNS, measureTriggerBatch } from './_trigger-batch.ts'

const RUNS = 3000
const ROUNDS = 200
/** Rounds of the Postgres rates, each contender once a round; the medians are printed. */
const RATE_ROUNDS = 3
const STEP_SIZES = [100, 1_000, 5_000]
const STEP_GROWTH_GOAL = 1.5
// Every run of a round is kept, so no store evicts or fills up mid-round.
const MAX_RUNS = 100_000

const quiet: Logger = { info() {}, warn() {}, error: (...args) => console.error(...args) }

type OpenStore = (label: string) => Promise<{ store: RunStore; close(): Promise<void> }>
type Runtime = ReturnType<typeof createTaskRuntime>

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

/** What the handler of a run being timed calls on its first line. */
let onStart: () => void = () => {}
const arm = (started: () => void) => {
  onStart = started
}

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

/** `body` on a task runtime over a fresh store made by `open`, closed after. */
async function withRuntime<T>(open: OpenStore, label: string, body: (rt: Runtime) => Promise<T>): Promise<T> {
  const { store, close } = await open(label)
  const rt = createTaskRuntime({ routes, store, logger: quiet, env: {} })
  try {
    return await body(rt)
  } finally {
    await rt.close()
    await close()
  }
}

/** Runs/s of RUNS runs of `task` triggered together, on a fresh store. */
const svcRate = (open: OpenStore, label: string, task: string) =>
  withRuntime(open, label, (rt) =>
    throughput(RUNS, async () => {
      const run = await rt.trigger(task)
      return () => rt.waitForRun(run.id)
    }),
  )

/** The svc figures on stores made by `open`, a fresh one per measurement; `rates` given, they are not measured again. */
async function measureSvc(open: OpenStore, rates?: { noop: number; threeSteps: number }): Promise<StoreFigures> {
  await withRuntime(open, 'warm', (rt) =>
    throughput(200, async () => {
      const run = await rt.trigger('steps')
      return () => rt.waitForRun(run.id)
    }),
  )
  const noop = rates?.noop ?? (await svcRate(open, 'noop', 'noop'))
  const threeSteps = rates?.threeSteps ?? (await svcRate(open, 'steps', 'steps'))
  const p50Ms = await withRuntime(open, 'latency', (rt) =>
    startLatency(
      ROUNDS,
      async () => {
        const run = await rt.trigger('noop')
        return () => rt.waitForRun(run.id)
      },
      arm,
    ),
  )
  const sendAndWait = async (rt: Runtime) => {
    const sent = await rt.sendEvent('bench.event')
    return () => rt.waitForRun(sent.runs[0].id)
  }
  const events = await withRuntime(open, 'events', (rt) => throughput(RUNS, () => sendAndWait(rt)))
  const eventStartMs = await withRuntime(open, 'event_latency', (rt) => startLatency(ROUNDS, () => sendAndWait(rt), arm))
  let i = 0
  const resumeLatency = (rt: Runtime) =>
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
      arm,
      true,
    )
  const eventResumeMs = await withRuntime(open, 'event_resume', resumeLatency)
  const eventResumeCrowdedMs = await withRuntime(open, 'event_resume_crowded', async (rt) => {
    for (let n = 0; n < CROWD; n++) await rt.trigger('sleeper')
    const asleep = async () => (await rt.store.countRunsByTask('suspended')).find((count) => count.taskName === 'sleeper')?.count ?? 0
    while ((await asleep()) < CROWD) await new Promise((resolve) => setTimeout(resolve, 20))
    return resumeLatency(rt)
  })
  return { noop, threeSteps, p50Ms, events, eventStartMs, eventResumeMs, eventResumeCrowdedMs }
}

interface PostgresRates {
  floor: number
  noop: number
  threeSteps: number
  graphile: Record<GraphileTuning, number>
}

/**
 * The Postgres rates, medians of RATE_ROUNDS rounds; each round measures
 * every contender once, in an order that rotates round by round, so that a
 * slower minute of a shared machine moves them all.
 */
async function measurePostgresRates(url: string, open: OpenStore): Promise<PostgresRates> {
  const graphileRate = async (tuning: GraphileTuning) => {
    const worker = await startGraphile(url, tuning)
    try {
      await worker.rate(200) // warm-up: its pool open and its statements prepared
      return await worker.rate(RUNS)
    } finally {
      await worker.stop()
    }
  }
  const contenders: [keyof PostgresRates | GraphileTuning, (round: number) => Promise<number>][] = [
    ['floor', () => postgresFloor(url, RUNS)],
    ['noop', (round) => svcRate(open, `noop_${round}`, 'noop')],
    ['threeSteps', (round) => svcRate(open, `steps_${round}`, 'steps')],
    ['defaults', () => graphileRate('defaults')],
    ['perfTest', () => graphileRate('perfTest')],
  ]
  const samples = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
  for (let round = 0; round < RATE_ROUNDS; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const [name, measure] = contenders[(k + round) % contenders.length]
      samples.get(name)!.push(await measure(round))
    }
  }
  const median = (name: string) => percentile(samples.get(name)!, 0.5)
  return {
    floor: median('floor'),
    noop: median('noop'),
    threeSteps: median('threeSteps'),
    graphile: { defaults: median('defaults'), perfTest: median('perfTest') },
  }
}

/** p50 from `addJob` to the task starting, for each of graphile-worker's settings. */
async function measureGraphileLatency(url: string): Promise<Record<GraphileTuning, number>> {
  const p50 = async (tuning: GraphileTuning) => {
    const worker = await startGraphile(url, tuning)
    try {
      return await worker.p50(ROUNDS)
    } finally {
      await worker.stop()
    }
  }
  return { defaults: await p50('defaults'), perfTest: await p50('perfTest') }
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
    `${label.padEnd(58)} ${value.padStart(12)}${ratio ? `   ${ratio.of.toFixed(2)} x` : ''}${ratio?.goal ? `   goal ${ratio.goal.padEnd(7)} ${ratio.ok ? 'ok' : 'MISSED'}` : ''}`,
  )
const goal = (of: number, sign: '>=' | '<=', bound: number) => ({
  of,
  goal: `${sign} ${bound}`,
  ok: sign === '>=' ? of >= bound : of <= bound,
})

console.log(
  `durable store benchmark, Node ${process.version}, ${RUNS.toLocaleString('en')} runs a round, p50 of ${ROUNDS} one at a time; ` +
    `Postgres with fsync and synchronous_commit on, its rates medians of ${RATE_ROUNDS} rounds\n`,
)

const pg = await startEmbeddedPostgres({ durable: true })
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-store-'))
try {
  const memory = await measureSvc(async () => ({ store: new MemoryRunStore({ maxRuns: MAX_RUNS }), close: async () => {} }))
  const sqlite = await measureSvc(async (label) => {
    const store = new SqliteRunStore({ path: join(dir, `${label}.db`), maxRuns: MAX_RUNS })
    return { store, close: async () => store.close() }
  })
  const openPostgres: OpenStore = async (label) => {
    // A schema per measurement, so each starts on empty tables.
    const store = new PostgresRunStore({ url: pg.url, schema: `svc_${label}`, maxRuns: MAX_RUNS })
    await store.ready()
    return { store, close: () => store.close() }
  }
  const rates = await measurePostgresRates(pg.url, openPostgres)
  const postgres = await measureSvc(openPostgres, rates)
  const graphileP50 = await measureGraphileLatency(pg.url)
  let batches = 0
  const batch = await measureTriggerBatch(() => openPostgres(`batch_${++batches}`))
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

  console.log(`\nPostgres, fsync on, synchronous_commit on (${RUNS.toLocaleString('en')} items a round, medians of ${RATE_ROUNDS} rounds)`)
  line(`floor: INSERT + UPDATE a job, own commits, ${FLOOR_CONNECTIONS} connections`, perSecond(rates.floor))
  for (const tuning of ['defaults', 'perfTest'] as const) {
    line(`${GRAPHILE_TUNINGS[tuning].label}: no-op jobs`, perSecond(rates.graphile[tuning]), { of: rates.graphile[tuning] / rates.floor })
  }
  line('svc Postgres: no-op runs, ÷ the floor', perSecond(postgres.noop), goal(postgres.noop / rates.floor, '>=', 0.5))
  line(
    'svc Postgres: no-op runs, ÷ graphile-worker perfTest',
    perSecond(postgres.noop),
    goal(postgres.noop / rates.graphile.perfTest, '>=', 2),
  )
  line('svc Postgres: three-step runs, ÷ no-op runs', perSecond(postgres.threeSteps), goal(postgres.threeSteps / postgres.noop, '>=', 0.5))
  if (typeof dbos === 'number') {
    line('svc Postgres: three-step runs, ÷ DBOS workflows', perSecond(postgres.threeSteps), goal(postgres.threeSteps / dbos, '>=', 1))
  }
  for (const tuning of ['defaults', 'perfTest'] as const) {
    line(`${GRAPHILE_TUNINGS[tuning].label}: p50 addJob → start`, `${graphileP50[tuning].toFixed(2)} ms`)
  }
  const graphileBest = Math.min(graphileP50.defaults, graphileP50.perfTest)
  line(
    'svc Postgres: p50 trigger → start, ÷ graphile-worker',
    `${postgres.p50Ms.toFixed(2)} ms`,
    goal(postgres.p50Ms / graphileBest, '<=', 1),
  )
  line(`svc Postgres: ${BATCH_RUNS.toLocaleString('en')} runs by trigger(), one at a time`, perSecond(batch.oneByOne))
  line(`svc Postgres: the same by one triggerMany(), ÷ one at a time`, perSecond(batch.batched), goal(batch.ratio, '>=', 5))
  // The largest size prints its step as a ratio to a step of the smallest.
  const stepGrowth = stepMs[stepMs.length - 1] / stepMs[0]
  for (const [i, steps] of STEP_SIZES.entries()) {
    const ratio = i === STEP_SIZES.length - 1 ? goal(stepGrowth, '<=', STEP_GROWTH_GOAL) : undefined
    line(`svc Postgres: a step of a ${steps.toLocaleString('en')}-step run`, `${(stepMs[i] * 1000).toFixed(0)} µs`, ratio)
  }
  if (typeof dbos === 'number') line('DBOS: three-step workflows', perSecond(dbos))
  else console.log(`DBOS: not measured (${dbos.reason})`)
} finally {
  rmSync(dir, { recursive: true, force: true })
  await pg.stop()
}
