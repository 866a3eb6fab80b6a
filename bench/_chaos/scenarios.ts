/**
 * The scenarios of the chaos harness, run against svc server processes
 * (cluster.ts) on a Postgres, with the faults of faults.ts. Each resolves
 * to what it counted; the tests (test/postgres/chaos-*.test.ts) run them
 * with short phases and check the counts, `npm run bench:chaos` with the
 * phases of the independent harness it follows, and prints them.
 *
 * Counts common to all: `accepted` runs (the client got an id), `lost`
 * (accepted, and not completed once the scenario's wait for them ended),
 * `failed` (a run that ended failed: with no task failing on purpose, the
 * database's fault became the task's), `stepsRunAgain` (a step that ran
 * after its record was written) and `attemptsRunTwice`.
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { type Answer, attemptsRunTwice, begunIn, Cluster, runsOf, stepsRunAgain, type SvcProcess } from './cluster.ts'
import { holdEverySlot, killBackends, type PostgresServer } from './faults.ts'
import { settle, sleep, spread } from './phases.ts'

export interface ChaosCounts {
  accepted: number
  lost: number
  failed: number
  stepsRunAgain: string[]
  attemptsRunTwice: string[]
}

export interface ScenarioSetup {
  /** A database of its own for the scenario. */
  url: string
  /** A directory for the effects log. */
  dir: string
  /** Written to with what the processes printed when something is off. */
  log?: (line: string) => void
}

/** Triggers `count` runs of `task` spread over `overMs`, round robin over `on`, each sent until accepted or `deadline`. */
function triggerSpread(
  cluster: Cluster,
  on: SvcProcess[],
  task: string,
  count: number,
  overMs: number,
  deadline: number,
  prefix: string,
  answers?: Answer[],
): Promise<string[]> {
  return spread(count, overMs, (i) => cluster.trigger(on[i % on.length], task, `${prefix}-${i}`, deadline, answers))
}

/** Waits until every run of `ids` has finished, or `ms` passed; resolves to the counts. */
function settleRuns(cluster: Cluster, url: string, task: string, ids: string[], ms: number): Promise<ChaosCounts> {
  return settle(
    ids,
    ms,
    () => runsOf(url, task),
    (run) => run.status,
    (runs) => {
      const effects = cluster.effects()
      return { stepsRunAgain: stepsRunAgain(effects, runs), attemptsRunTwice: attemptsRunTwice(effects) }
    },
  )
}

/** The slowest of `answers`, in ms. */
function slowest(answers: Answer[]): number {
  return Math.round(Math.max(0, ...answers.map((answer) => answer.ms)))
}

export interface BackendKillResult extends ChaosCounts {
  /** Backends terminated. */
  killed: number
  /** The slowest answer to a trigger after the kills stopped (goal: under 1 s). */
  slowestAfterMs: number
  /** Triggers after the kills that were not accepted at once. */
  refusedAfter: number
}

/**
 * pg_backend_kill: the backends of the svc processes terminated every
 * `everyMs` for `killForMs` while `runs` runs are triggered; then 20
 * triggers, one every 50 ms, each timed.
 */
export async function backendKills(
  setup: ScenarioSetup,
  { processes = 2, runs = 300, killForMs = 20_000, everyMs = 500 } = {},
): Promise<BackendKillResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'backend-kills.log') })
  try {
    const on = await cluster.start(processes)
    const stop = killBackends(setup.url, everyMs)
    const ids = await triggerSpread(cluster, on, 'chaos.steps', runs, killForMs, Date.now() + killForMs + 10_000, 'kill')
    const killed = await stop()
    const after: Answer[] = []
    const more: Promise<string | undefined>[] = []
    for (let i = 0; i < 20; i++) {
      more.push(cluster.trigger(on[i % on.length], 'chaos.steps', `after-${i}`, Date.now(), after))
      await sleep(50)
    }
    ids.push(...(await Promise.all(more)).filter((id): id is string => id !== undefined))
    const counts = await settleRuns(cluster, setup.url, 'chaos.steps', ids, 30_000)
    if (counts.lost > 0) for (const p of on) setup.log?.(p.output())
    return { ...counts, killed, slowestAfterMs: slowest(after), refusedAfter: after.filter((answer) => answer.status !== 202).length }
  } finally {
    await cluster.close()
  }
}

export interface RestartResult extends ChaosCounts {
  /** Triggers sent while the server was down, each once. */
  triedWhileDown: number
  /** Of those, answered 503 STORE_UNAVAILABLE with Retry-After (the rest: no answer, or another). */
  unavailableWhileDown: number
  /** The slowest answer while down, in ms (goal: under 2 s). */
  slowestWhileDownMs: number
  /** Runs the database holds for a trigger that was answered 503 (goal: none). */
  createdAfterAnswer: number
  /** From the server accepting connections again to the first accepted trigger, in ms (goal: under 2 s). */
  recoveryMs: number
}

/**
 * postgres_restart: `runs` runs triggered, then the server stopped
 * (`mode`) for `downMs` while a trigger is tried every 200 ms; then the
 * time until a trigger is accepted, and the runs in flight finish on
 * their own.
 */
export async function restart(
  setup: ScenarioSetup,
  server: PostgresServer,
  { processes = 2, runs = 100, downMs = 8000, mode = 'fast' as 'fast' | 'immediate' } = {},
): Promise<RestartResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, `restart-${mode}.log`) })
  try {
    const on = await cluster.start(processes)
    const ids = await triggerSpread(cluster, on, 'chaos.steps', runs, 500, Date.now() + 10_000, `before-${mode}`)
    await server.halt(mode)
    const down: Answer[] = []
    const refusedKeys: string[] = []
    const upAt = Date.now() + downMs
    for (let i = 0; Date.now() < upAt; i++) {
      const key = `down-${mode}-${i}`
      const answers: Answer[] = []
      // Once, with no retry: what a client hears while the database is down.
      await cluster.trigger(on[i % on.length], 'chaos.steps', key, 0, answers)
      down.push(...answers)
      if (answers.some((answer) => answer.status === 503)) refusedKeys.push(key)
      await sleep(200)
    }
    await server.resume()
    const back = Date.now()
    let recoveryMs = Number.NaN
    for (let i = 0; Date.now() - back < 30_000; i++) {
      const id = await cluster.trigger(on[i % on.length], 'chaos.steps', `back-${mode}-${i}`, 0)
      if (id !== undefined) {
        recoveryMs = Date.now() - back
        ids.push(id)
        break
      }
      await sleep(50)
    }
    const counts = await settleRuns(cluster, setup.url, 'chaos.steps', ids, 30_000)
    const createdAfterAnswer = await keysOf(setup.url, refusedKeys)
    if (counts.lost > 0) for (const p of on) setup.log?.(p.output())
    return {
      ...counts,
      triedWhileDown: down.length,
      unavailableWhileDown: down.filter((answer) => answer.code === 'STORE_UNAVAILABLE' && answer.retryAfter !== null).length,
      slowestWhileDownMs: slowest(down),
      createdAfterAnswer,
      recoveryMs,
    }
  } finally {
    await cluster.close()
  }
}

/** How many runs hold one of `keys` as their idempotency key. */
async function keysOf(url: string, keys: string[]): Promise<number> {
  const db = postgres(url, { onnotice: () => {}, max: 1 })
  try {
    const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM svc.runs WHERE idempotency_key = ANY(${keys}::text[])`
    return n
  } finally {
    await db.end()
  }
}

export interface PoolResult extends ChaosCounts {
  /** Connection slots the fault held. */
  held: number
  /** The slowest answer to a trigger while the slots were held, in ms. */
  slowestWhileHeldMs: number
}

/**
 * pool_exhaustion: every free connection slot of the server held for
 * `holdMs` while `runs` runs are triggered.
 */
export async function poolExhaustion(setup: ScenarioSetup, { processes = 2, runs = 100, holdMs = 15_000 } = {}): Promise<PoolResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'pool.log') })
  try {
    const on = await cluster.start(processes)
    const slots = await holdEverySlot(setup.url)
    const answers: Answer[] = []
    const ids = await triggerSpread(cluster, on, 'chaos.steps', runs, holdMs, Date.now() + holdMs + 10_000, 'pool', answers)
    const during = answers.slice()
    await slots.release()
    const counts = await settleRuns(cluster, setup.url, 'chaos.steps', ids, 30_000)
    if (counts.lost > 0) for (const p of on) setup.log?.(p.output())
    return { ...counts, held: slots.held, slowestWhileHeldMs: slowest(during) }
  } finally {
    await cluster.close()
  }
}

/**
 * retry_storm: `runs` runs of chaos.flaky (two failed attempts each, then
 * done) across `processes` processes. `wrongAttempts`: runs that did not
 * record exactly three attempts.
 */
export async function retryStorm(
  setup: ScenarioSetup,
  { processes = 3, runs = 500 } = {},
): Promise<ChaosCounts & { wrongAttempts: number }> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'retry-storm.log') })
  try {
    const on = await cluster.start(processes)
    const ids = await triggerSpread(cluster, on, 'chaos.flaky', runs, 1000, Date.now() + 20_000, 'storm')
    const counts = await settleRuns(cluster, setup.url, 'chaos.flaky', ids, 60_000)
    const held = await runsOf(setup.url, 'chaos.flaky')
    if (counts.lost > 0) for (const p of on) setup.log?.(p.output())
    return { ...counts, wrongAttempts: ids.filter((id) => held.get(id)?.attempts !== 3).length }
  } finally {
    await cluster.close()
  }
}

export interface CrashRecoveryResult extends ChaosCounts {
  /** Accepted runs not completed yet when the process was killed. */
  unfinishedAtKill: number
  /** Of those, runs the killed process had begun. */
  begunInKilled: number
  /** From the kill until every accepted run had finished, in ms (NaN: some never did within the wait). */
  recoveryMs: number
}

/**
 * crash_recovery: `runs` runs triggered at once across `processes`
 * processes; once all are accepted and one process has begun a tenth of
 * its share, it is killed (`kill -9`) and the others take its runs over.
 */
export async function crashRecovery(setup: ScenarioSetup, { processes = 3, runs = 300 } = {}): Promise<CrashRecoveryResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'crash-recovery.log') })
  try {
    const on = await cluster.start(processes)
    const victim = on[0]
    const ids = await triggerSpread(cluster, on, 'chaos.steps', runs, 0, Date.now() + 20_000, 'crash')
    await whenBegun(() => cluster.effects(), victim.pid, Math.ceil(runs / processes / 10))
    const before = await runsOf(setup.url, 'chaos.steps')
    await victim.kill()
    const killedAt = Date.now()
    const begunInKilled = begunIn(cluster.effects(), victim.pid)
    const counts = await settleRuns(cluster, setup.url, 'chaos.steps', ids, 120_000)
    const recoveryMs = counts.lost === 0 ? Date.now() - killedAt : Number.NaN
    if (counts.lost > 0) for (const p of on) setup.log?.(p.output())
    return {
      ...counts,
      unfinishedAtKill: ids.filter((id) => before.get(id)?.status !== 'completed').length,
      begunInKilled,
      recoveryMs,
    }
  } finally {
    await cluster.close()
  }
}

export interface RepeatedKillsResult extends ChaosCounts {
  /** Kills of the process (`kill -9`), each followed by a new process in its place. */
  kills: number
  /** Runs completed per second over `windowMs` before the first kill. */
  rateBefore: number
  /** The same over `windowMs` from the last restart on. */
  rateAfter: number
}

/**
 * repeated_kills: a steady `perSecond` runs a second across `processes`
 * processes while one of them is killed (`kill -9`) `kills` times, down
 * for `downMs` and then replaced by a new process that runs for `upMs`.
 * A trigger whose process does not answer goes to the next live one with
 * the same idempotency key, as a client behind a load balancer would.
 */
export async function repeatedKills(
  setup: ScenarioSetup,
  { processes = 3, kills = 5, perSecond = 30, downMs = 1000, upMs = 5000, windowMs = 5000 } = {},
): Promise<RepeatedKillsResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'repeated-kills.log') })
  try {
    const live = await cluster.start(processes)
    const load = steadyLoad(perSecond, (i) => triggerOnAny(cluster, live, i, 'chaos.steps', `steady-${i}`, Date.now() + 20_000))
    // Past the first runs' start-up, so the window holds the steady state.
    await sleep(Math.min(2000, windowMs))
    const rateBefore = await completionRate(setup.url, 'chaos.steps', windowMs)
    for (let k = 0; k < kills; k++) {
      // The same one each time: the one started last takes its place at the end.
      const victim = live.pop()!
      await victim.kill()
      await sleep(downMs)
      live.push(...(await cluster.start(1)))
      if (k < kills - 1) await sleep(upMs)
    }
    const rateAfter = await completionRate(setup.url, 'chaos.steps', windowMs)
    const ids = await load.stop()
    const counts = await settleRuns(cluster, setup.url, 'chaos.steps', ids, 60_000)
    if (counts.lost > 0) for (const p of cluster.processes) setup.log?.(p.output())
    return { ...counts, kills, rateBefore, rateAfter }
  } finally {
    await cluster.close()
  }
}

/**
 * Resolves once process `pid` has begun `count` runs of chaos.steps that
 * none has finished, or after `ms`: so that a kill finds it mid-flight.
 */
export async function whenBegun(effects: () => string[][], pid: number, count: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms
  while (Date.now() < until && begunIn(effects(), pid) < count) await sleep(10)
}

/**
 * Calls `send(i)` `perSecond` times a second, i counting from 0, until
 * `stop()`, which resolves to the ids the calls resolved to.
 */
export function steadyLoad(perSecond: number, send: (i: number) => Promise<string | undefined>): { stop(): Promise<string[]> } {
  const calls: Promise<string | undefined>[] = []
  let stopped = false
  const loop = (async () => {
    const began = Date.now()
    for (let i = 0; !stopped; i++) {
      const due = began + (i * 1000) / perSecond
      if (due > Date.now()) await sleep(due - Date.now())
      if (stopped) break
      const call = send(i)
      // Awaited in stop(): a call that fails before then is reported there, not as unhandled.
      call.catch(() => {})
      calls.push(call)
    }
  })()
  return {
    async stop() {
      stopped = true
      await loop
      return (await Promise.all(calls)).filter((id): id is string => id !== undefined)
    },
  }
}

/**
 * Triggers `task` once on `live[first]`, then on the next live process
 * and the next, with the same `key`, until one accepts it or `deadline`
 * passed. `live` is read on each try, so a process killed and replaced
 * meanwhile is skipped.
 */
async function triggerOnAny(
  cluster: Cluster,
  live: SvcProcess[],
  first: number,
  task: string,
  key: string,
  deadline: number,
): Promise<string | undefined> {
  for (let k = first; ; k++) {
    const id = await cluster.trigger(live[k % live.length], task, key, 0)
    if (id !== undefined || Date.now() >= deadline) return id
    await sleep(100)
  }
}

/** Runs of `task` completed per second over the next `ms`, counted in the database. */
async function completionRate(url: string, task: string, ms: number): Promise<number> {
  const completed = async () => [...(await runsOf(url, task)).values()].filter((run) => run.status === 'completed').length
  const from = await completed()
  const began = Date.now()
  await sleep(ms)
  const to = await completed()
  return (to - from) / ((Date.now() - began) / 1000)
}
