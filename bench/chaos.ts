/**
 * The chaos harness (`npm run bench:chaos`): svc and pg-boss under the
 * faults of an independent Postgres job-queue benchmark
 * (hardbyte/postgresql-job-queue-benchmarking), side by side, on one
 * embedded Postgres with its durable defaults (fsync and
 * synchronous_commit on) that the benchmark starts and removes; each
 * scenario, and each side of it, on a database of its own:
 * - kills: backends terminated every 500 ms for 20 s while 300 runs are
 *   triggered, then 20 triggers timed;
 * - restart: Postgres stopped for 8 s, fast and then immediate, with 100
 *   runs in flight and a trigger tried every 200 ms while it is down;
 * - pool: every free connection slot held for 15 s while 100 runs are
 *   triggered;
 * - storm: 500 runs failing their first two attempts across 3 processes,
 *   5 times over, the counts summed;
 * - crash: 300 runs in flight across 3 processes, one of them killed;
 * - repeated: 30 runs/s across 3 processes while one is killed and
 *   replaced 5 times;
 * - priority: 20 runs of priority 0, then runs of priority 10 at twice
 *   what the task's two slots start, for up to 60 s;
 * - held: a transaction held open 60 s under a closed-loop load (rates
 *   before, during and after, and dead tuples).
 * svc's side is bench/_chaos/scenarios.ts, pg-boss's bench/_chaos/pgboss-side.ts.
 * Goals for svc, printed as ✅ or ❌ and never failing the run: nothing
 * lost or failed, no attempt run twice, no recorded step run again, every
 * trigger accepted in the end; while
 * Postgres is down every trigger answered 503 STORE_UNAVAILABLE with
 * Retry-After within 2 s and nothing created after it, and the first
 * success within 2 s of Postgres accepting connections again; after the
 * kills every trigger accepted within 1 s; under the high-priority load
 * every low-priority run completed within 60 s.
 * Flags: --quick for short phases, --only kills,restart,pool,storm,crash,repeated,priority,held.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { startEmbeddedPostgres } from '../test/postgres/_embedded.ts'
import { type HeldTransactionResult, heldTransaction, pgbossHeldTransaction } from './_chaos/held-transaction.ts'
import { pgbossPriorityStarvation, priorityStarvation, type StarvationResult } from './_chaos/priority.ts'
import * as pgboss from './_chaos/pgboss-side.ts'
import * as svc from './_chaos/scenarios.ts'
import type { ChaosCounts, ScenarioSetup } from './_chaos/scenarios.ts'

const SCENARIOS = ['kills', 'restart', 'pool', 'storm', 'crash', 'repeated', 'priority', 'held']
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } })
const only = args.only?.split(',').map((name) => name.trim())
for (const name of only ?? []) {
  if (!SCENARIOS.includes(name)) throw new RangeError(`bench:chaos --only takes ${SCENARIOS.join(', ')} (got ${JSON.stringify(name)})`)
}
const scenario = (name: string) => only === undefined || only.includes(name)

/** The independent harness's phases, or short ones (those of test/postgres/chaos-*.test.ts) with --quick. */
const PHASES = args.quick
  ? {
      kills: { processes: 2, runs: 60, killForMs: 3000, everyMs: 250 },
      restart: { processes: 2, runs: 30, downMs: 2500 },
      pool: { processes: 2, runs: 40, holdMs: 3000 },
      storm: { processes: 3, runs: 100 },
      stormRounds: 2,
      crash: { processes: 3, runs: 60 },
      repeated: { processes: 3, kills: 2, perSecond: 30, downMs: 500, upMs: 2000, windowMs: 2000 },
      priority: { processes: 2, lows: 20, highPerSecond: 100, loadMs: 25_000, highPriority: 1 },
      held: { processes: 2, clients: 16, baselineMs: 3000, holdMs: 6000, afterMs: 3000 },
    }
  : {
      kills: { processes: 2, runs: 300, killForMs: 20_000, everyMs: 500 },
      restart: { processes: 2, runs: 100, downMs: 8000 },
      pool: { processes: 2, runs: 100, holdMs: 15_000 },
      storm: { processes: 3, runs: 500 },
      stormRounds: 5,
      crash: { processes: 3, runs: 300 },
      repeated: { processes: 3, kills: 5, perSecond: 30, downMs: 1000, upMs: 5000, windowMs: 5000 },
      priority: { processes: 2, lows: 20, highPerSecond: 200, loadMs: 60_000, highPriority: 10 },
      held: { processes: 2, clients: 32, baselineMs: 20_000, holdMs: 60_000, afterMs: 30_000 },
    }

/** A row of a scenario's table: its label, and its figure from a side's result. */
type Row<T> = [label: string, figure: (result: T) => string | number]
interface Goal {
  text: string
  ok: boolean
}

const count = (value: number) => (Number.isNaN(value) ? 'never' : Math.round(value).toLocaleString('en'))
const ms = (value: number) => (Number.isNaN(value) ? 'never' : `${Math.round(value).toLocaleString('en')} ms`)
const seconds = (value: number) => (Number.isNaN(value) ? 'never' : `${(value / 1000).toFixed(1)} s`)

/** The rows every scenario has. */
const COUNT_ROWS: Row<ChaosCounts>[] = [
  ['accepted (the client got an id)', (r) => count(r.accepted)],
  ['lost (accepted, never finished)', (r) => count(r.lost)],
  ['failed', (r) => count(r.failed)],
  ['attempts run twice', (r) => count(r.attemptsRunTwice.length)],
  ['steps run again (pg-boss: effects of a job)', (r) => count(r.stepsRunAgain.length)],
]

/** The goals every scenario has. */
function countGoals(counts: ChaosCounts): Goal[] {
  return [
    { text: `${counts.lost} lost`, ok: counts.lost === 0 },
    { text: `${counts.failed} failed`, ok: counts.failed === 0 },
    { text: `${counts.attemptsRunTwice.length} duplicates`, ok: counts.attemptsRunTwice.length === 0 },
    { text: `${counts.stepsRunAgain.length} recorded steps run again`, ok: counts.stepsRunAgain.length === 0 },
  ]
}

/**
 * An answer of svc's to a trigger that the client does not expect, neither
 * an id nor a 503 (Cluster.trigger), ends svc's side of the scenario: a
 * finding about svc, reported as such, not a crash of the harness.
 */
const UNEXPECTED_ANSWER = /^POST \/__tasks\/\S+ answered \d+/

// A scenario sends its triggers before it awaits them (triggerSpread in
// scenarios.ts), so such an answer to an early one rejects before anything
// awaits it; left to that await, it ends its scenario, and anything else
// still ends the run.
process.on('unhandledRejection', (reason) => {
  if (!(reason instanceof Error && UNEXPECTED_ANSWER.test(reason.message))) throw reason
})

/** How long one side of a scenario may take before it is reported stuck; with full phases the longest takes about 2 minutes. */
const SIDE_TIMEOUT_MS = 300_000
/** Set once a side was left stuck: its processes were ended, but what waits on them in this process never settles. */
let abandoned = false

/**
 * One side of a scenario. It ends in its result; in an Error, when svc
 * answered what its client does not expect or the side did not end in
 * SIDE_TIMEOUT_MS (a server that never started, a run that never
 * settled), both findings to report; or in a throw, a crash of the harness.
 */
async function side<T>(run: () => Promise<T>): Promise<T | Error> {
  let timer: NodeJS.Timeout | undefined
  const stuck = new Promise<Error>((resolve) => {
    timer = setTimeout(() => resolve(new Error(`it did not end within ${SIDE_TIMEOUT_MS / 1000} s`)), SIDE_TIMEOUT_MS)
  })
  try {
    const result = await Promise.race([run(), stuck])
    if (result instanceof Error) {
      abandoned = true
      endProcesses()
    }
    return result
  } catch (error) {
    if (error instanceof Error && UNEXPECTED_ANSWER.test(error.message)) return error
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Kills (`kill -9`) the svc servers and pg-boss workers this process
 * started that still run, found by their parent in /proc: a side left
 * stuck, or a crash of the harness, cannot reach them otherwise.
 */
function endProcesses(): void {
  let entries: string[]
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))
  } catch {
    return
  }
  for (const pid of entries) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // The fields after the command's closing parenthesis: state, then the parent's pid.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (parent === process.pid && /(svc-server|pgboss-worker)\.ts/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) {
        process.kill(Number(pid), 'SIGKILL')
      }
    } catch {
      // Gone meanwhile.
    }
  }
}

const LABEL = 48
const summaries: string[] = []

interface Scenario<T> {
  /** Its name in the summary. */
  name: string
  title: string
  /** Its own rows, after those of every scenario. */
  rows: Row<T>[]
  /** svc's goals of its own, after those of every scenario. */
  goals: (result: T) => Goal[]
  /**
   * The triggers it sends until each is accepted, when it knows how many:
   * one never accepted (the client gave up at the deadline) is a server
   * that kept refusing, or stopped answering.
   */
  sent?: number
}

/** Prints a scenario's table, svc next to pg-boss, and keeps its summary line: svc against its goals. */
function report<T extends ChaosCounts>(scenario: Scenario<T>, svcResult: T | Error, pgbossResult: T | Error): void {
  const { name, title, rows, goals, sent } = scenario
  const unaccepted: Row<T>[] = sent === undefined ? [] : [['never accepted (the client gave up)', (r) => count(sent - r.accepted)]]
  const figure = (result: T | Error, of: Row<T>[1]) => String(result instanceof Error ? '-' : of(result)).padStart(12)
  console.log(`\n${title}`)
  console.log(`${''.padEnd(LABEL)} ${'svc'.padStart(12)} ${'pg-boss'.padStart(12)}`)
  for (const [label, of] of [...COUNT_ROWS, ...unaccepted, ...rows]) {
    console.log(`${label.padEnd(LABEL)} ${figure(svcResult, of)} ${figure(pgbossResult, of)}`)
  }
  if (pgbossResult instanceof Error) console.log(`pg-boss stopped: ${pgbossResult.message}`)
  if (svcResult instanceof Error) console.log(`svc stopped: ${svcResult.message}`)
  summarize(name, svcResult, (r) => [
    ...countGoals(r),
    ...goals(r),
    ...(sent === undefined ? [] : [{ text: `${sent - r.accepted} triggers never accepted`, ok: r.accepted === sent }]),
  ])
}

/** Prints the rows of a scenario whose figures are not the counts every scenario has, one column a side. */
function printSides<T>(sides: Record<string, T | Error>, rows: Row<T>[]): void {
  console.log(
    `${''.padEnd(LABEL)} ${Object.keys(sides)
      .map((name) => name.padStart(12))
      .join(' ')}`,
  )
  for (const [label, of] of rows) {
    const figures = Object.values(sides).map((r) => String(r instanceof Error ? '-' : of(r)).padStart(12))
    console.log(`${label.padEnd(LABEL)} ${figures.join(' ')}`)
  }
  for (const [name, r] of Object.entries(sides)) if (r instanceof Error) console.log(`${name} stopped: ${r.message}`)
}

/** Keeps a scenario's summary line: svc against `goals`. */
function summarize<T>(name: string, result: T | Error, goals: (result: T) => Goal[]): void {
  if (result instanceof Error) {
    summaries.push(`❌ ${name.padEnd(20)} svc stopped: ${result.message}`)
    return
  }
  const met = goals(result)
  const ok = met.every((goal) => goal.ok)
  summaries.push(
    `${ok ? '✅' : '❌'} ${name.padEnd(20)} svc: ${met.map((goal) => (goal.ok ? goal.text : `${goal.text} (missed)`)).join(', ')}`,
  )
}

const pgbossVersion = (createRequire(import.meta.url)('pg-boss/package.json') as { version: string }).version
console.log(
  `chaos benchmark, Node ${process.version}, svc against pg-boss ${pgbossVersion}, ${args.quick ? 'short phases (--quick)' : "the independent harness's phases"}; ` +
    'Postgres with fsync and synchronous_commit on, each scenario and side on a database of its own',
)

const pg = await startEmbeddedPostgres({ durable: true })
// On a crash of the harness, nothing below gets to stop what it started.
process.once('exit', () => {
  endProcesses()
  void pg.halt('immediate')
})
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-chaos-'))
const processLog = join(dir, 'processes.log')
let keep = false

async function database(name: string): Promise<string> {
  const admin = postgres(pg.url, { onnotice: () => {}, max: 1 })
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(pg.url)
  url.pathname = `/${name}`
  return url.href
}

/** A database of its own for one side of one scenario; what its processes printed, when something was lost, goes to processes.log. */
async function setup(name: string): Promise<ScenarioSetup> {
  return {
    url: await database(name),
    dir,
    log: (line) => {
      keep = true
      appendFileSync(processLog, `--- ${name}\n${line}\n`)
    },
  }
}

try {
  if (scenario('kills')) {
    const phases = PHASES.kills
    report(
      {
        name: 'backend kills',
        title: `Backend kills: the processes' backends terminated every ${phases.everyMs} ms for ${phases.killForMs / 1000} s while ${phases.runs} runs are triggered across ${phases.processes} processes, then 20 triggers`,
        rows: [
          ['backends terminated', (r) => count(r.killed)],
          ['slowest answer after the kills', (r) => ms(r.slowestAfterMs)],
          ['not accepted at once after the kills', (r) => count(r.refusedAfter)],
        ],
        goals: (r) => [
          {
            text: `every trigger after the kills accepted within 1 s (slowest ${ms(r.slowestAfterMs)}, ${r.refusedAfter} not accepted)`,
            ok: r.slowestAfterMs < 1000 && r.refusedAfter === 0,
          },
        ],
        sent: phases.runs + 20,
      },
      await side(async () => svc.backendKills(await setup('kills_svc'), phases)),
      await side(async () => pgboss.backendKills(await setup('kills_pgboss'), phases)),
    )
  }

  if (scenario('restart')) {
    for (const mode of ['fast', 'immediate'] as const) {
      const phases = { ...PHASES.restart, mode }
      report(
        {
          name: `restart (${mode})`,
          title: `Postgres restart (${mode} shutdown): down ${phases.downMs / 1000} s with ${phases.runs} runs in flight on ${phases.processes} processes, a trigger every 200 ms while down`,
          rows: [
            ['triggers while down', (r) => count(r.triedWhileDown)],
            ['refused at once (svc: 503 with Retry-After)', (r) => count(r.unavailableWhileDown)],
            ['slowest answer while down', (r) => ms(r.slowestWhileDownMs)],
            ['created after a refusal', (r) => count(r.createdAfterAnswer)],
            ['first success after Postgres is back', (r) => ms(r.recoveryMs)],
          ],
          goals: (r) => [
            {
              text: `${r.unavailableWhileDown} of ${r.triedWhileDown} triggers while down answered 503 with Retry-After, slowest ${ms(r.slowestWhileDownMs)}`,
              ok: r.triedWhileDown > 0 && r.unavailableWhileDown === r.triedWhileDown && r.slowestWhileDownMs < 2000,
            },
            { text: `${r.createdAfterAnswer} created after a 503`, ok: r.createdAfterAnswer === 0 },
            { text: `first success ${ms(r.recoveryMs)} after Postgres was back`, ok: r.recoveryMs < 2000 },
          ],
          // The runs before the stop, and the first accepted after it.
          sent: phases.runs + 1,
        },
        await side(async () => svc.restart(await setup(`restart_${mode}_svc`), pg, phases)),
        await side(async () => pgboss.restart(await setup(`restart_${mode}_pgboss`), pg, phases)),
      )
    }
  }

  if (scenario('pool')) {
    const phases = PHASES.pool
    report(
      {
        name: 'pool exhaustion',
        title: `Pool exhaustion: every free connection slot held for ${phases.holdMs / 1000} s while ${phases.runs} runs are triggered across ${phases.processes} processes`,
        rows: [
          ['connection slots held', (r) => count(r.held)],
          ['slowest answer while held', (r) => ms(r.slowestWhileHeldMs)],
        ],
        goals: () => [],
        sent: phases.runs,
      },
      await side(async () => svc.poolExhaustion(await setup('pool_svc'), phases)),
      await side(async () => pgboss.poolExhaustion(await setup('pool_pgboss'), phases)),
    )
  }

  if (scenario('storm')) {
    const phases = PHASES.storm
    type Storm = ChaosCounts & { wrongAttempts: number }
    const sum = (rounds: Storm[]): Storm => ({
      accepted: rounds.reduce((n, round) => n + round.accepted, 0),
      lost: rounds.reduce((n, round) => n + round.lost, 0),
      failed: rounds.reduce((n, round) => n + round.failed, 0),
      stepsRunAgain: rounds.flatMap((round) => round.stepsRunAgain),
      attemptsRunTwice: rounds.flatMap((round) => round.attemptsRunTwice),
      wrongAttempts: rounds.reduce((n, round) => n + round.wrongAttempts, 0),
    })
    // The sums of the rounds, or the first round's Error: a side that stopped runs no more rounds.
    const rounds = async (run: (round: number) => Promise<Storm>): Promise<Storm | Error> => {
      const done: Storm[] = []
      for (let round = 1; round <= PHASES.stormRounds; round++) {
        const result = await side(() => run(round))
        if (result instanceof Error) return result
        done.push(result)
      }
      return sum(done)
    }
    const svcStorm = await rounds(async (round) => svc.retryStorm(await setup(`storm_${round}_svc`), phases))
    const pgbossStorm = await rounds(async (round) => pgboss.retryStorm(await setup(`storm_${round}_pgboss`), phases))
    report(
      {
        name: 'retry storm',
        title: `Retry storm: ${phases.runs} runs failing their first two attempts across ${phases.processes} processes, ${PHASES.stormRounds} times, summed`,
        rows: [['runs without exactly 3 attempts', (r) => count(r.wrongAttempts)]],
        goals: (r) => [{ text: `${r.wrongAttempts} runs without exactly 3 attempts`, ok: r.wrongAttempts === 0 }],
        sent: phases.runs * PHASES.stormRounds,
      },
      svcStorm,
      pgbossStorm,
    )
  }

  if (scenario('crash')) {
    const phases = PHASES.crash
    report(
      {
        name: 'crash recovery',
        title: `Crash recovery: ${phases.runs} runs triggered at once across ${phases.processes} processes, one process killed (kill -9)`,
        rows: [
          ['unfinished at the kill', (r) => count(r.unfinishedAtKill)],
          ['of them begun in the killed process', (r) => count(r.begunInKilled)],
          ['all finished, after the kill', (r) => seconds(r.recoveryMs)],
        ],
        goals: (r) => [{ text: `all finished ${seconds(r.recoveryMs)} after the kill`, ok: !Number.isNaN(r.recoveryMs) }],
        sent: phases.runs,
      },
      await side(async () => svc.crashRecovery(await setup('crash_svc'), phases)),
      await side(async () => pgboss.crashRecovery(await setup('crash_pgboss'), phases)),
    )
  }

  if (scenario('repeated')) {
    const phases = PHASES.repeated
    const ratio = (r: svc.RepeatedKillsResult) => (r.rateAfter / r.rateBefore).toFixed(2)
    report(
      {
        name: 'repeated kills',
        title: `Repeated kills: ${phases.perSecond} runs/s across ${phases.processes} processes, one killed (kill -9) and replaced ${phases.kills} times, ${phases.upMs / 1000} s apart`,
        rows: [
          [`runs completed/s, ${phases.windowMs / 1000} s before the kills`, (r) => r.rateBefore.toFixed(1)],
          [`runs completed/s, ${phases.windowMs / 1000} s after the last`, (r) => r.rateAfter.toFixed(1)],
          ['after ÷ before', ratio],
        ],
        goals: (r) => [{ text: `rate after ÷ before ${ratio(r)}`, ok: true }],
      },
      await side(async () => svc.repeatedKills(await setup('repeated_svc'), phases)),
      await side(async () => pgboss.repeatedKills(await setup('repeated_pgboss'), phases)),
    )
  }

  if (scenario('priority')) {
    const phases = PHASES.priority
    const sides = {
      svc: await side(async () => priorityStarvation(await setup('priority_svc'), phases)),
      'pg-boss': await side(async () => pgbossPriorityStarvation(await setup('priority_pgboss'), phases)),
    }
    console.log(
      `\nPriority starvation: ${phases.lows} runs of priority 0, then runs of priority ${phases.highPriority} at ${phases.highPerSecond}/s for up to ${phases.loadMs / 1000} s, two at a time for 20 ms each (at most 100/s), on ${phases.processes} processes`,
    )
    printSides<StarvationResult>(sides, [
      ['low-priority runs done under the load', (r) => `${r.lowsDone} of ${r.lows}`],
      ['all of them done, after they were sent', (r) => (r.allLowsDoneMs === undefined ? 'never' : seconds(r.allLowsDoneMs))],
      ['high-priority runs sent', (r) => count(r.highs)],
      ['high-priority runs queued at the end', (r) => count(r.highsQueuedAtEnd)],
    ])
    summarize('priority', sides.svc, (r) => [
      { text: `${r.lowsDone} of ${r.lows} low-priority runs done`, ok: r.lowsDone === r.lows },
      {
        text: r.allLowsDoneMs === undefined ? 'not all' : `all within ${seconds(r.allLowsDoneMs)}`,
        ok: r.allLowsDoneMs !== undefined && r.allLowsDoneMs <= phases.loadMs,
      },
      // The load lasted while the low runs waited only if high runs were still queued when they were done.
      { text: `${count(r.highsQueuedAtEnd)} high-priority runs still queued`, ok: r.highsQueuedAtEnd > 0 },
    ])
  }

  if (scenario('held')) {
    const phases = PHASES.held
    const sides = {
      svc: await side(async () => heldTransaction(await setup('held_svc'), phases)),
      'pg-boss': await side(async () => pgbossHeldTransaction(await setup('held_pgboss'), phases)),
    }
    console.log(
      `\nHeld transaction: BEGIN; SELECT txid_current() held ${phases.holdMs / 1000} s under ${phases.clients} clients sending as fast as answered, ${phases.processes} processes`,
    )
    const ratio = (r: HeldTransactionResult, rate: number) => (r.baselinePerSecond === 0 ? Number.NaN : rate / r.baselinePerSecond)
    const withRatio = (r: HeldTransactionResult, rate: number) => `${count(rate)} (${ratio(r, rate).toFixed(2)})`
    // The tables with dead tuples on either side.
    const tables = new Set(
      Object.values(sides).flatMap((r) =>
        r instanceof Error ? [] : Object.keys(r.deadAtHoldEnd).filter((table) => r.deadAtHoldEnd[table] > 0),
      ),
    )
    printSides<HeldTransactionResult>(sides, [
      [`runs completed/s, baseline (${phases.baselineMs / 1000} s)`, (r) => count(r.baselinePerSecond)],
      ['runs completed/s, during the hold', (r) => withRatio(r, r.holdPerSecond)],
      ['runs completed/s, its last third', (r) => withRatio(r, r.holdEndPerSecond)],
      [`runs completed/s, ${phases.afterMs / 1000} s after`, (r) => withRatio(r, r.afterPerSecond)],
      ['runs lost', (r) => count(r.lost)],
      ...[...tables].map(
        (table): Row<HeldTransactionResult> => [
          `dead tuples of ${table} at the end of the hold`,
          (r) => count(r.deadAtHoldEnd[table] ?? 0),
        ],
      ),
    ])
    summarize('held transaction', sides.svc, (r) => [
      { text: `${r.lost} lost`, ok: r.lost === 0 },
      { text: `hold ÷ baseline ${ratio(r, r.holdPerSecond).toFixed(2)}`, ok: ratio(r, r.holdPerSecond) >= 0.7 },
      { text: `after ÷ baseline ${ratio(r, r.afterPerSecond).toFixed(2)}`, ok: ratio(r, r.afterPerSecond) >= 0.9 },
    ])
  }

  console.log(`\nsvc against its goals\n${summaries.join('\n')}`)
  if (keep) console.log(`\nWhat the processes printed in the scenarios that lost runs: ${processLog}`)
} finally {
  if (!keep) rmSync(dir, { recursive: true, force: true })
  await pg.stop()
}
// What waits on a stuck side's processes never settles, and would keep this process alive.
if (abandoned) process.exit()
