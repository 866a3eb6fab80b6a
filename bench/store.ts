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
 *   to the task starting, measured as svc's; pg-boss on the same database,
 *   no-op jobs/s tuned for throughput as its documentation says, with its
 *   p50 from `send` to the handler starting, LISTEN/NOTIFY on
 *   (bench/_pgboss.ts);
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
 * ≤ 1.5 (a step costs no more the more steps its run holds). svc's
 * no-op runs/s ÷ pg-boss's jobs/s and its p50 ÷ pg-boss's are printed
 * without a goal.
 * Events, on each store, as ratios to trigger() on the same store: events/s
 * sent with one task on the event (÷ no-op runs/s), p50 from sendEvent() to
 * the started run's first line and p50 from sendEvent() to a waiting run's
 * resumption (÷ p50 trigger → start). They have no goal yet.
 * Events with many runs waiting (bench/_event-waits.ts), on SQLite and on
 * Postgres: with 10,000 runs suspended on waits for other event names and
 * 1,000 on event E, events/s sent with one task on the event ÷ trigger()
 * no-op runs/s on the same kind of store just before (goal ≥ 0.5), and the
 * time from one send of E to the last of its 1,000 runs resumed.
 * `-- --only pgboss,event-waits,rates` runs only those parts (pg-boss with the
 * floor and svc's no-op rate in its rounds, and both p50s).
 * svc's side (its tasks, runtimes and figures) is in bench/_store-svc.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'
import { SqliteRunStore } from '../src/sqlite/store.ts'
import { PostgresRunStore } from '../src/postgres.ts'
import { MemoryRunStore } from '../src/runtime/tasks/index.ts'
import { EVENT_WAITS_GOAL, type EventWaitFigures, measureEventWaits, WAITING_E, WAITING_OTHERS } from './_event-waits.ts'
import { PGBOSS_TUNINGS, startPgBoss } from './_pgboss.ts'
import { BATCH, FLOOR_CONNECTIONS, postgresBatchedFloor, postgresFloor } from './_postgres-floor.ts'
import { GRAPHILE_TUNINGS, type GraphileTuning, measureDbos, startGraphile } from './_store-anchors.ts'
import { percentile } from './_store-measure.ts'
import { measureSearchPostgres, measureSearchSqlite, printSearch } from './_search.ts'
import { measureTagCost, printTagCost } from './_tag-cost.ts'
import { CROWD, MAX_RUNS, measureSvc, type OpenStore, ROUNDS, RUNS, svcLatency, svcRate } from './_store-svc.ts'
import { recordSteps } from './_steps-growth.ts'
import { BATCH_RUNS, measureTriggerBatch } from './_trigger-batch.ts'

const BATCHED_FLOOR = `batched floor: the same, ${BATCH} jobs a statement, own commits`

/** Rounds of the Postgres rates, each contender once a round; the medians are printed. */
const RATE_ROUNDS = 3
const STEP_SIZES = [100, 1_000, 5_000]
const STEP_GROWTH_GOAL = 1.5

/** `--only pgboss,event-waits`: only those parts, with what their ratios need. */
const PARTS = ['pgboss', 'event-waits', 'rates', 'search'] as const
const onlyArg = process.argv.indexOf('--only')
const only = onlyArg === -1 ? undefined : new Set((process.argv[onlyArg + 1] ?? '').split(','))
for (const part of only ?? []) {
  if (!(PARTS as readonly string[]).includes(part)) {
    throw new TypeError(`bench:store: --only takes a comma-separated list of ${PARTS.join(', ')} (got "${part}")`)
  }
}
interface PostgresRates {
  floor: number
  batchedFloor: number
  noop: number
  threeSteps: number
  graphile: Record<GraphileTuning, number>
  pgboss: number
}

type Contender = keyof Omit<PostgresRates, 'graphile'> | GraphileTuning

/**
 * The Postgres rates of `names`, medians of RATE_ROUNDS rounds; each round
 * measures every contender once, in an order that rotates round by round,
 * so that a slower minute of a shared machine moves them all. A contender
 * not named is NaN.
 */
async function measurePostgresRates(url: string, open: OpenStore, names: readonly Contender[]): Promise<PostgresRates> {
  const graphileRate = async (tuning: GraphileTuning) => {
    const worker = await startGraphile(url, tuning)
    try {
      await worker.rate(200) // warm-up: its pool open and its statements prepared
      return await worker.rate(RUNS)
    } finally {
      await worker.stop()
    }
  }
  const pgbossRate = async () => {
    const worker = await startPgBoss(url, 'throughput')
    try {
      await worker.rate(200) // warm-up, as graphile-worker's
      return await worker.rate(RUNS)
    } finally {
      await worker.stop()
    }
  }
  const all: [Contender, (round: number) => Promise<number>][] = [
    ['floor', () => postgresFloor(url, RUNS)],
    ['batchedFloor', () => postgresBatchedFloor(url, RUNS)],
    ['noop', (round) => svcRate(open, `noop_${round}`, 'noop')],
    ['threeSteps', (round) => svcRate(open, `steps_${round}`, 'steps')],
    ['defaults', () => graphileRate('defaults')],
    ['perfTest', () => graphileRate('perfTest')],
    ['pgboss', pgbossRate],
  ]
  const contenders = all.filter(([name]) => names.includes(name))
  const samples = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
  for (let round = 0; round < RATE_ROUNDS; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const [name, measure] = contenders[(k + round) % contenders.length]
      samples.get(name)!.push(await measure(round))
    }
  }
  const median = (name: Contender) => (samples.has(name) ? percentile(samples.get(name)!, 0.5) : Number.NaN)
  return {
    floor: median('floor'),
    batchedFloor: median('batchedFloor'),
    noop: median('noop'),
    threeSteps: median('threeSteps'),
    graphile: { defaults: median('defaults'), perfTest: median('perfTest') },
    pgboss: median('pgboss'),
  }
}

/** p50 from `send` to pg-boss's handler starting, with LISTEN/NOTIFY on, measured as svc's. */
async function measurePgBossLatency(url: string): Promise<number> {
  const worker = await startPgBoss(url, 'latency')
  try {
    return await worker.p50(ROUNDS)
  } finally {
    await worker.stop()
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

/** pg-boss's rate, as a ratio to the floor, and svc's no-op runs/s as a ratio to it. */
function printPgBossRate(rates: PostgresRates, svcNoop: number) {
  line(`${PGBOSS_TUNINGS.throughput.label}: no-op jobs`, perSecond(rates.pgboss), { of: rates.pgboss / rates.floor })
  line('svc Postgres: no-op runs, ÷ pg-boss', perSecond(svcNoop), { of: svcNoop / rates.pgboss })
}

/** pg-boss's p50 send → start, and svc's p50 trigger → start as a ratio to it. */
function printPgBossLatency(pgbossMs: number, svcMs: number) {
  line(`${PGBOSS_TUNINGS.latency.label}: p50 send → start`, `${pgbossMs.toFixed(2)} ms`)
  line('svc Postgres: p50 trigger → start, ÷ pg-boss', `${svcMs.toFixed(2)} ms`, { of: svcMs / pgbossMs })
}

function printEventWaits(name: string, figures: EventWaitFigures) {
  line(`svc ${name}: no-op runs by trigger(), the baseline`, perSecond(figures.baseline))
  line(
    `svc ${name}: events sent, ${(WAITING_OTHERS + WAITING_E).toLocaleString('en')} runs waiting, ÷ baseline`,
    perSecond(figures.events),
    goal(figures.events / figures.baseline, '>=', EVENT_WAITS_GOAL),
  )
  line(`svc ${name}: one send of E → its ${WAITING_E.toLocaleString('en')} waits resumed`, `${figures.resumeAllMs.toFixed(0)} ms`)
}

const postgresHeading = () =>
  console.log(`\nPostgres, fsync on, synchronous_commit on (${RUNS.toLocaleString('en')} items a round, medians of ${RATE_ROUNDS} rounds)`)
const eventWaitsHeading = () =>
  console.log(
    `\nEvents with ${WAITING_OTHERS.toLocaleString('en')} runs waiting on other events and ${WAITING_E.toLocaleString('en')} on E ` +
      `(${RUNS.toLocaleString('en')} events sent together, each starting one no-op run)`,
  )

console.log(
  `durable store benchmark, Node ${process.version}, ${RUNS.toLocaleString('en')} runs a round, p50 of ${ROUNDS} one at a time; ` +
    `Postgres with fsync and synchronous_commit on, its rates medians of ${RATE_ROUNDS} rounds${only ? `; only ${[...only].join(', ')}` : '\n'}`,
)

const pg = await startEmbeddedPostgres({ durable: true })
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-store-'))
try {
  const openSqlite: OpenStore = async (label) => {
    const store = new SqliteRunStore({ path: join(dir, `${label}.db`), maxRuns: MAX_RUNS })
    return { store, close: async () => store.close() }
  }
  const openPostgres: OpenStore = async (label) => {
    // A schema per measurement, so each starts on empty tables.
    const store = new PostgresRunStore({ url: pg.url, schema: `svc_${label}`, maxRuns: MAX_RUNS })
    await store.ready()
    return { store, close: () => store.close() }
  }
  const measureAllEventWaits = async () => ({
    sqlite: await measureEventWaits(openSqlite, 'waits'),
    postgres: await measureEventWaits(openPostgres, 'waits'),
  })
  const printAllEventWaits = (waits: Awaited<ReturnType<typeof measureAllEventWaits>>) => {
    eventWaitsHeading()
    printEventWaits('SQLite', waits.sqlite)
    printEventWaits('Postgres', waits.postgres)
  }

  if (only) {
    if (only.has('pgboss')) {
      const rates = await measurePostgresRates(pg.url, openPostgres, ['floor', 'noop', 'pgboss'])
      const svcMs = await svcLatency(openPostgres)
      const pgbossMs = await measurePgBossLatency(pg.url)
      postgresHeading()
      line(`floor: INSERT + UPDATE a job, own commits, ${FLOOR_CONNECTIONS} connections`, perSecond(rates.floor))
      printPgBossRate(rates, rates.noop)
      printPgBossLatency(pgbossMs, svcMs)
    }
    if (only.has('event-waits')) printAllEventWaits(await measureAllEventWaits())
    if (only.has('rates')) {
      const rates = await measurePostgresRates(pg.url, openPostgres, ['floor', 'batchedFloor', 'noop', 'threeSteps'])
      postgresHeading()
      line(`floor: INSERT + UPDATE a job, own commits, ${FLOOR_CONNECTIONS} connections`, perSecond(rates.floor))
      line(BATCHED_FLOOR, perSecond(rates.batchedFloor))
      line('svc Postgres: no-op runs, ÷ floor', perSecond(rates.noop), { of: rates.noop / rates.floor })
      line('svc Postgres: no-op runs, ÷ batched floor', perSecond(rates.noop), goal(rates.noop / rates.batchedFloor, '>=', 0.5))
      line('svc Postgres: three-step runs, ÷ no-op runs', perSecond(rates.threeSteps), goal(rates.threeSteps / rates.noop, '>=', 0.7))
    }
    if (only.has('search')) {
      printSearch(await measureSearchSqlite(dir), await measureSearchPostgres(pg.url))
      printTagCost('SQLite', await measureTagCost(openSqlite, 'tags'))
      printTagCost('Postgres', await measureTagCost(openPostgres, 'tags'))
    }
  } else {
    const memory = await measureSvc(async () => ({ store: new MemoryRunStore({ maxRuns: MAX_RUNS }), close: async () => {} }))
    const sqlite = await measureSvc(openSqlite)
    const rates = await measurePostgresRates(pg.url, openPostgres, [
      'floor',
      'batchedFloor',
      'noop',
      'threeSteps',
      'defaults',
      'perfTest',
      'pgboss',
    ])
    const postgres = await measureSvc(openPostgres, rates)
    const graphileP50 = await measureGraphileLatency(pg.url)
    const pgbossP50 = await measurePgBossLatency(pg.url)
    let batches = 0
    const batch = await measureTriggerBatch(() => openPostgres(`batch_${++batches}`))
    const dbos = await measureDbos(pg.url, RUNS)
    const stepMs = await measureSteps(pg.url)
    const waits = await measureAllEventWaits()

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

    postgresHeading()
    line(`floor: INSERT + UPDATE a job, own commits, ${FLOOR_CONNECTIONS} connections`, perSecond(rates.floor))
    line(BATCHED_FLOOR, perSecond(rates.batchedFloor))
    for (const tuning of ['defaults', 'perfTest'] as const) {
      line(`${GRAPHILE_TUNINGS[tuning].label}: no-op jobs`, perSecond(rates.graphile[tuning]), { of: rates.graphile[tuning] / rates.floor })
    }
    line('svc Postgres: no-op runs, ÷ the floor', perSecond(postgres.noop), goal(postgres.noop / rates.floor, '>=', 0.5))
    line('svc Postgres: no-op runs, ÷ the batched floor', perSecond(postgres.noop), goal(postgres.noop / rates.batchedFloor, '>=', 0.5))
    line(
      'svc Postgres: no-op runs, ÷ graphile-worker perfTest',
      perSecond(postgres.noop),
      goal(postgres.noop / rates.graphile.perfTest, '>=', 2),
    )
    printPgBossRate(rates, postgres.noop)
    line(
      'svc Postgres: three-step runs, ÷ no-op runs',
      perSecond(postgres.threeSteps),
      goal(postgres.threeSteps / postgres.noop, '>=', 0.7),
    )
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
    printPgBossLatency(pgbossP50, postgres.p50Ms)
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
    printAllEventWaits(waits)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
  await pg.stop()
}
