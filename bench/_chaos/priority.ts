/**
 * priority_starvation of the chaos harness, on both sides: 20 runs (jobs)
 * of low priority are sent, then high-priority ones keep coming at twice
 * what the task's two slots can start (20 ms of work each: 100 a second),
 * so the queue never empties of them. With strict priority the low ones
 * wait as long as the load lasts; svc ages a queued run's priority
 * (`route.priorityAging`, 1 point a second by default), so they start once
 * they have waited as long as their priority is short of the others'.
 *
 * svc runs `chaos.ranked` (svc-server.ts: `concurrency: 2`, shared by
 * every process); pg-boss works `chaos.ranked` with one job at a time in
 * each of two worker processes (pgboss-worker.ts).
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { Cluster } from './cluster.ts'
import { PgBossCluster } from './pgboss-side.ts'
import { sleep } from './phases.ts'
import type { ScenarioSetup } from './scenarios.ts'

export interface StarvationResult {
  /** Low-priority runs sent, and those completed before the load stopped. */
  lows: number
  lowsDone: number
  /** When the last low-priority run completed, in ms after they were sent; undefined while some were left. */
  allLowsDoneMs: number | undefined
  /** High-priority runs sent, and those still queued when the load stopped: the load lasted throughout while some wait. */
  highs: number
  highsQueuedAtEnd: number
}

export interface StarvationPhases {
  processes?: number
  lows?: number
  highPerSecond?: number
  /** How long the high-priority load lasts at most; it stops once every low-priority run completed. */
  loadMs?: number
  /** The priority of the load (the low runs have 0): with aging at 1 point a second, how many seconds a low run waits before it ranks with new high ones. */
  highPriority?: number
}

/** What the scenario needs of a side. */
interface Side {
  send(key: string, priority: number): Promise<string | undefined>
  /** How many of `ids` have completed. */
  completed(ids: string[]): Promise<number>
  /** How many of the task's runs wait to start. */
  queued(): Promise<number>
}

async function starve(
  side: Side,
  { lows = 20, highPerSecond = 200, loadMs = 60_000, highPriority = 10 }: StarvationPhases,
): Promise<StarvationResult> {
  const began = Date.now()
  const deadline = began + loadMs
  const lowIds = (await Promise.all(Array.from({ length: lows }, (_, i) => side.send(`low-${i}`, 0)))).filter(
    (id): id is string => id !== undefined,
  )
  let highs = 0
  let stopped = false
  const sending: Promise<unknown>[] = []
  // Sends in ticks of 10 ms, each catching up to the rate, so a slow send does not slow the load.
  const load = (async () => {
    while (!stopped && Date.now() < deadline) {
      const due = Math.floor(((Date.now() - began) / 1000) * highPerSecond)
      for (; highs < due; highs++) sending.push(side.send(`high-${highs}`, highPriority))
      await sleep(10)
    }
  })()
  let lowsDone = 0
  let allLowsDoneMs: number | undefined
  while (Date.now() < deadline) {
    lowsDone = await side.completed(lowIds)
    if (lowsDone === lowIds.length) {
      allLowsDoneMs = Date.now() - began
      break
    }
    await sleep(250)
  }
  const highsQueuedAtEnd = await side.queued()
  stopped = true
  await load
  await Promise.all(sending)
  return { lows: lowIds.length, lowsDone, allLowsDoneMs, highs, highsQueuedAtEnd }
}

/** svc's side: `chaos.ranked` triggered with `Svc-Priority` round robin over its processes. */
export async function priorityStarvation(setup: ScenarioSetup, phases: StarvationPhases = {}): Promise<StarvationResult> {
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'priority.log') })
  const db = postgres(setup.url, { onnotice: () => {}, max: 1 })
  try {
    const on = await cluster.start(phases.processes ?? 2)
    let sent = 0
    return await starve(
      {
        send: (key, priority) =>
          cluster.trigger(on[sent++ % on.length], 'chaos.ranked', key, Date.now() + 10_000, undefined, {
            'svc-priority': String(priority),
          }),
        completed: async (ids) => {
          // A run evicted past maxRuns had finished: only those still there and not completed are left.
          const [{ n }] = await db<{ n: number }[]>`
            SELECT count(*)::int AS n FROM svc.runs WHERE id = ANY(${ids}::text[]) AND status <> 'completed'`
          return ids.length - n
        },
        queued: async () => {
          const [{ n }] = await db<{ n: number }[]>`
            SELECT count(*)::int AS n FROM svc.runs WHERE task_name = 'chaos.ranked' AND status = 'queued'`
          return n
        },
      },
      phases,
    )
  } finally {
    await db.end()
    await cluster.close()
  }
}

/** pg-boss's side: jobs of `chaos.ranked` sent with pg-boss's `priority`. */
export async function pgbossPriorityStarvation(setup: ScenarioSetup, phases: StarvationPhases = {}): Promise<StarvationResult> {
  const cluster = await PgBossCluster.open(setup.url, join(setup.dir, 'priority.log'))
  const db = postgres(setup.url, { onnotice: () => {}, max: 1 })
  try {
    await cluster.start(phases.processes ?? 2)
    return await starve(
      {
        send: (key, priority) => cluster.send('chaos.ranked', key, Date.now() + 10_000, undefined, { priority }),
        completed: async (ids) => {
          const [{ n }] = await db<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY(${ids}::uuid[]) AND state = 'completed'`
          return n
        },
        queued: async () => {
          const [{ n }] = await db<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'chaos.ranked' AND state IN ('created', 'retry')`
          return n
        },
      },
      phases,
    )
  } finally {
    await db.end()
    await cluster.close()
  }
}
