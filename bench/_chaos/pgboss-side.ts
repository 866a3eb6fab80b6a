/**
 * The chaos harness's scenarios driven against pg-boss, for `npm run
 * bench:chaos` to print next to svc's: worker processes
 * (pgboss-worker.ts) on one database, jobs sent with `boss.send` from this
 * process, the faults of faults.ts. Each scenario mirrors its namesake in
 * scenarios.ts and resolves to the same counts.
 *
 * A job is sent with an id derived from its key, and sent again after an
 * error until `send` resolves, as svc's client sends a trigger again with
 * its idempotency key: pg-boss inserts with ON CONFLICT DO NOTHING, so a
 * resend of a job that landed is one job. "Accepted" means `send`
 * resolved. pg-boss has no steps: a job that runs again runs all its
 * effects again, so `stepsRunAgain` counts every effect of a job that ran
 * more than once.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PgBoss, type Queue, type SendOptions } from 'pg-boss'
import postgres from 'postgres'
import { type Answer, attemptsRunTwice, begunIn, readEffects } from './cluster.ts'
import { holdEverySlot, killBackends, type PostgresServer } from './faults.ts'
import { settle, sleep, spread } from './phases.ts'
import {
  type BackendKillResult,
  type ChaosCounts,
  type CrashRecoveryResult,
  type PoolResult,
  type RepeatedKillsResult,
  type RestartResult,
  type ScenarioSetup,
  steadyLoad,
  whenBegun,
} from './scenarios.ts'

const WORKER = fileURLToPath(new URL('./pgboss-worker.ts', import.meta.url))

/**
 * The queues, as the worker's jobs need them. `heartbeatSeconds` at
 * pg-boss's least: without it a killed worker's jobs stay active until
 * they expire, 15 minutes later by default. chaos.steps gets five
 * attempts, as the independent harness enqueues its jobs with: pg-boss
 * spends an attempt on each interruption, which svc does not.
 */
const QUEUES: Record<string, Omit<Queue, 'name'>> = {
  'chaos.steps': { retryLimit: 4, heartbeatSeconds: 10, notify: true },
  'chaos.flaky': { retryLimit: 2, heartbeatSeconds: 10, notify: true },
  'chaos.ranked': { heartbeatSeconds: 10, notify: true },
  'chaos.noop': { heartbeatSeconds: 10, notify: true },
}

/** How long a send may wait for a connection before it fails, as long as svc's client waits for an answer. */
const SEND_TIMEOUT_MS = 10_000

export interface WorkerProcess {
  readonly pid: number
  /** Everything it printed, for a failure's message. */
  output(): string
  /** `kill -9`. */
  kill(): Promise<void>
}

/** pg-boss as the harness runs it: worker processes, and a sender in this process. */
export class PgBossCluster {
  readonly processes: WorkerProcess[] = []
  readonly #children: ChildProcess[] = []
  readonly #url: string
  readonly #effects: string
  readonly #boss: PgBoss
  private constructor(url: string, effects: string, boss: PgBoss) {
    this.#url = url
    this.#effects = effects
    this.#boss = boss
  }

  /** Starts the sender, which installs pg-boss's schema, and makes the queues. */
  static async open(url: string, effects: string): Promise<PgBossCluster> {
    writeFileSync(effects, '')
    const boss = new PgBoss({
      connectionString: url,
      // The name faults.ts's killBackends terminates: svc's triggers go
      // through its servers' connections, which carry it.
      application_name: 'svc',
      connectionTimeoutMillis: SEND_TIMEOUT_MS,
      supervise: false,
      schedule: false,
    })
    // Connections the faults end under the sender: each send they fail is
    // counted in its answers, and an idle connection's end costs nothing.
    boss.on('error', () => {})
    await boss.start()
    for (const [name, options] of Object.entries(QUEUES)) await boss.createQueue(name, options)
    return new PgBossCluster(url, effects, boss)
  }

  async start(count = 1): Promise<WorkerProcess[]> {
    const started = await Promise.all(Array.from({ length: count }, () => this.#spawn()))
    this.processes.push(...started)
    return started
  }

  async #spawn(): Promise<WorkerProcess> {
    const child = spawn(process.execPath, [WORKER, this.#url, this.#effects], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#children.push(child)
    let out = ''
    child.stdout!.on('data', (chunk) => (out += chunk))
    child.stderr!.on('data', (chunk) => (out += chunk))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    await new Promise<void>((resolve, reject) => {
      const look = setInterval(() => {
        if (/^ready$/m.test(out)) {
          clearInterval(look)
          resolve()
        } else if (child.exitCode !== null) {
          clearInterval(look)
          reject(new Error(`a pg-boss worker exited before it was ready:\n${out}`))
        }
      }, 20)
    })
    return {
      pid: child.pid!,
      output: () => out,
      async kill() {
        child.kill('SIGKILL')
        await exited
      },
    }
  }

  /**
   * Sends a job to `queue` with the id of `key`, sending again on an error
   * until `deadline` (epoch ms; one that has passed already sends once).
   * Resolves to the job's id, or to undefined when the deadline passed
   * first; `answers` collects the time each send took, status 202 for one
   * that resolved and 0 for one that failed. `options` go with each send.
   */
  async send(queue: string, key: string, deadline: number, answers?: Answer[], options: SendOptions = {}): Promise<string | undefined> {
    const id = jobId(key)
    for (;;) {
      const began = performance.now()
      try {
        // null when a send before it landed: the job is there either way.
        await this.#boss.send(queue, {}, { ...options, id })
        answers?.push({ ms: performance.now() - began, status: 202, retryAfter: null })
        return id
      } catch (error) {
        answers?.push({ ms: performance.now() - began, status: 0, code: (error as { code?: string }).code, retryAfter: null })
      }
      if (Date.now() >= deadline) return undefined
      await sleep(100)
    }
  }

  effects(): string[][] {
    return readEffects(this.#effects)
  }

  /** Kills every worker still running and stops the sender. */
  async close(): Promise<void> {
    for (const child of this.#children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await this.#boss.stop({ graceful: false, close: true }).catch(() => {})
  }
}

/** A job id for `key`: the same key, the same id, so a resend is the same job. */
export function jobId(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** What the database holds of the jobs of `queue`, read with a plain connection. */
export async function jobsOf(url: string, queue: string): Promise<Map<string, { state: string; retryCount: number }>> {
  const db = postgres(url, { onnotice: () => {}, max: 1 })
  try {
    const rows = await db<{ id: string; state: string; retry_count: number }[]>`
      SELECT id::text, state::text, retry_count FROM pgboss.job WHERE name = ${queue}`
    return new Map(rows.map((row) => [row.id, { state: row.state, retryCount: row.retry_count }]))
  } finally {
    await db.end()
  }
}

/** Effects of chaos.steps that ran more than once for one job. */
export function effectsRunAgain(effects: string[][]): string[] {
  const byEffect = new Map<string, string[]>()
  for (const [jobId, effect, pid] of effects) {
    if (effect === 'attempt') continue
    const key = `${jobId} ${effect}`
    const pids = byEffect.get(key)
    if (pids) pids.push(pid)
    else byEffect.set(key, [pid])
  }
  return [...byEffect].filter(([, pids]) => pids.length > 1).map(([key, pids]) => `${key}: ran ${pids.length} times, in ${pids.join(', ')}`)
}

/** Sends `count` jobs to `queue`, spread over `overMs`, each until accepted or `deadline`; resolves to the ids. */
function sendSpread(
  cluster: PgBossCluster,
  queue: string,
  count: number,
  overMs: number,
  deadline: number,
  prefix: string,
  answers?: Answer[],
): Promise<string[]> {
  return spread(count, overMs, (i) => cluster.send(queue, `${prefix}-${i}`, deadline, answers))
}

/** Waits until every job of `ids` has finished, or `ms` passed; resolves to the counts. */
function settleJobs(cluster: PgBossCluster, url: string, queue: string, ids: string[], ms: number): Promise<ChaosCounts> {
  return settle(
    ids,
    ms,
    () => jobsOf(url, queue),
    (job) => job.state,
    () => {
      const effects = cluster.effects()
      return { stepsRunAgain: effectsRunAgain(effects), attemptsRunTwice: attemptsRunTwice(effects) }
    },
  )
}

const slowest = (answers: Answer[]) => Math.round(Math.max(0, ...answers.map((answer) => answer.ms)))
const refused = (answers: Answer[]) => answers.filter((answer) => answer.status !== 202).length

/** `body` on a PgBossCluster of its own, closed after; on lost jobs, what the workers printed goes to `setup.log`. */
async function withCluster<T extends ChaosCounts>(
  setup: ScenarioSetup,
  log: string,
  body: (cluster: PgBossCluster) => Promise<T>,
): Promise<T> {
  const cluster = await PgBossCluster.open(setup.url, join(setup.dir, `pgboss-${log}.log`))
  try {
    const result = await body(cluster)
    if (result.lost > 0) for (const p of cluster.processes) setup.log?.(p.output())
    return result
  } finally {
    await cluster.close()
  }
}

/** pg_backend_kill, as scenarios.ts's backendKills. */
export function backendKills(
  setup: ScenarioSetup,
  { processes = 2, runs = 300, killForMs = 20_000, everyMs = 500 } = {},
): Promise<BackendKillResult> {
  return withCluster(setup, 'backend-kills', async (cluster) => {
    await cluster.start(processes)
    const stop = killBackends(setup.url, everyMs)
    const ids = await sendSpread(cluster, 'chaos.steps', runs, killForMs, Date.now() + killForMs + 10_000, 'kill')
    const killed = await stop()
    const after: Answer[] = []
    const more: Promise<string | undefined>[] = []
    for (let i = 0; i < 20; i++) {
      more.push(cluster.send('chaos.steps', `after-${i}`, Date.now(), after))
      await sleep(50)
    }
    ids.push(...(await Promise.all(more)).filter((id): id is string => id !== undefined))
    const counts = await settleJobs(cluster, setup.url, 'chaos.steps', ids, 30_000)
    return { ...counts, killed, slowestAfterMs: slowest(after), refusedAfter: refused(after) }
  })
}

/**
 * postgres_restart, as scenarios.ts's restart. A send refused while the
 * server is down is one that failed: pg-boss has no answer of its own for
 * it, so `unavailableWhileDown` counts the sends that failed.
 */
export function restart(
  setup: ScenarioSetup,
  server: PostgresServer,
  { processes = 2, runs = 100, downMs = 8000, mode = 'fast' as 'fast' | 'immediate' } = {},
): Promise<RestartResult> {
  return withCluster(setup, `restart-${mode}`, async (cluster) => {
    await cluster.start(processes)
    const ids = await sendSpread(cluster, 'chaos.steps', runs, 500, Date.now() + 10_000, `before-${mode}`)
    await server.halt(mode)
    const down: Answer[] = []
    const refusedIds: string[] = []
    const upAt = Date.now() + downMs
    for (let i = 0; Date.now() < upAt; i++) {
      const key = `down-${mode}-${i}`
      const answers: Answer[] = []
      // Once, with no retry: what a sender hears while the database is down.
      await cluster.send('chaos.steps', key, 0, answers)
      down.push(...answers)
      if (refused(answers) > 0) refusedIds.push(jobId(key))
      await sleep(200)
    }
    await server.resume()
    const back = Date.now()
    let recoveryMs = Number.NaN
    for (let i = 0; Date.now() - back < 30_000; i++) {
      const id = await cluster.send('chaos.steps', `back-${mode}-${i}`, 0)
      if (id !== undefined) {
        recoveryMs = Date.now() - back
        ids.push(id)
        break
      }
      await sleep(50)
    }
    const counts = await settleJobs(cluster, setup.url, 'chaos.steps', ids, 30_000)
    const jobs = await jobsOf(setup.url, 'chaos.steps')
    return {
      ...counts,
      triedWhileDown: down.length,
      unavailableWhileDown: refused(down),
      slowestWhileDownMs: slowest(down),
      createdAfterAnswer: refusedIds.filter((id) => jobs.has(id)).length,
      recoveryMs,
    }
  })
}

/** pool_exhaustion, as scenarios.ts's poolExhaustion. */
export function poolExhaustion(setup: ScenarioSetup, { processes = 2, runs = 100, holdMs = 15_000 } = {}): Promise<PoolResult> {
  return withCluster(setup, 'pool', async (cluster) => {
    await cluster.start(processes)
    const slots = await holdEverySlot(setup.url)
    const answers: Answer[] = []
    const ids = await sendSpread(cluster, 'chaos.steps', runs, holdMs, Date.now() + holdMs + 10_000, 'pool', answers)
    const during = answers.slice()
    await slots.release()
    const counts = await settleJobs(cluster, setup.url, 'chaos.steps', ids, 30_000)
    return { ...counts, held: slots.held, slowestWhileHeldMs: slowest(during) }
  })
}

/** retry_storm, as scenarios.ts's retryStorm: jobs of chaos.flaky that did not complete on exactly their third attempt are `wrongAttempts`. */
export function retryStorm(setup: ScenarioSetup, { processes = 3, runs = 500 } = {}): Promise<ChaosCounts & { wrongAttempts: number }> {
  return withCluster(setup, 'retry-storm', async (cluster) => {
    await cluster.start(processes)
    const ids = await sendSpread(cluster, 'chaos.flaky', runs, 1000, Date.now() + 20_000, 'storm')
    const counts = await settleJobs(cluster, setup.url, 'chaos.flaky', ids, 60_000)
    const jobs = await jobsOf(setup.url, 'chaos.flaky')
    return { ...counts, wrongAttempts: ids.filter((id) => jobs.get(id)?.retryCount !== 2).length }
  })
}

/** crash_recovery, as scenarios.ts's crashRecovery; a killed worker's jobs come back once their heartbeat is stale. */
export function crashRecovery(setup: ScenarioSetup, { processes = 3, runs = 300 } = {}): Promise<CrashRecoveryResult> {
  return withCluster(setup, 'crash-recovery', async (cluster) => {
    const on = await cluster.start(processes)
    const victim = on[0]
    const ids = await sendSpread(cluster, 'chaos.steps', runs, 0, Date.now() + 20_000, 'crash')
    await whenBegun(() => cluster.effects(), victim.pid, Math.ceil(runs / processes / 10))
    const before = await jobsOf(setup.url, 'chaos.steps')
    await victim.kill()
    const killedAt = Date.now()
    const begunInKilled = begunIn(cluster.effects(), victim.pid)
    const counts = await settleJobs(cluster, setup.url, 'chaos.steps', ids, 120_000)
    return {
      ...counts,
      unfinishedAtKill: ids.filter((id) => before.get(id)?.state !== 'completed').length,
      begunInKilled,
      recoveryMs: counts.lost === 0 ? Date.now() - killedAt : Number.NaN,
    }
  })
}

/** repeated_kills, as scenarios.ts's repeatedKills; the jobs are sent from this process, so a kill reaches only the workers. */
export function repeatedKills(
  setup: ScenarioSetup,
  { processes = 3, kills = 5, perSecond = 30, downMs = 1000, upMs = 5000, windowMs = 5000 } = {},
): Promise<RepeatedKillsResult> {
  return withCluster(setup, 'repeated-kills', async (cluster) => {
    const live = await cluster.start(processes)
    const load = steadyLoad(perSecond, (i) => cluster.send('chaos.steps', `steady-${i}`, Date.now() + 20_000))
    await sleep(Math.min(2000, windowMs))
    const rateBefore = await completionRate(setup.url, 'chaos.steps', windowMs)
    for (let k = 0; k < kills; k++) {
      const victim = live.pop()!
      await victim.kill()
      await sleep(downMs)
      live.push(...(await cluster.start(1)))
      if (k < kills - 1) await sleep(upMs)
    }
    const rateAfter = await completionRate(setup.url, 'chaos.steps', windowMs)
    const ids = await load.stop()
    const counts = await settleJobs(cluster, setup.url, 'chaos.steps', ids, 60_000)
    return { ...counts, kills, rateBefore, rateAfter }
  })
}

/** Jobs of `queue` completed per second over the next `ms`. */
async function completionRate(url: string, queue: string, ms: number): Promise<number> {
  const completed = async () => [...(await jobsOf(url, queue)).values()].filter((job) => job.state === 'completed').length
  const from = await completed()
  const began = Date.now()
  await sleep(ms)
  const to = await completed()
  return (to - from) / ((Date.now() - began) / 1000)
}
