/**
 * idle_in_tx of the chaos harness, on both sides: a transaction left open
 * (`BEGIN; SELECT txid_current()`) keeps vacuum from removing any row
 * version that changed after it began, so rows changed over and over
 * leave versions behind that queries walk past. The workers take a steady
 * closed-loop load (clients that each send again as soon as the last send
 * was answered) through a baseline, the hold and after it; the runs (jobs)
 * completed in each phase give its throughput, and the dead tuples of the
 * side's tables are read at the end of the hold.
 *
 * svc: server processes triggering `chaos.noop` (one step); pg-boss:
 * worker processes working `chaos.noop`, jobs sent from this process.
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { Cluster } from './cluster.ts'
import { holdTransaction } from './faults.ts'
import { PgBossCluster } from './pgboss-side.ts'
import { sleep } from './phases.ts'
import type { ScenarioSetup } from './scenarios.ts'

export interface HeldTransactionResult {
  /** Runs completed a second in each phase. */
  baselinePerSecond: number
  holdPerSecond: number
  /** In the last third of the hold, where the dead versions are most. */
  holdEndPerSecond: number
  afterPerSecond: number
  /** Triggers answered in the hold, and runs they started. */
  triggeredInHold: number
  /** Dead tuples of each of the side's tables at the end of the hold, most first. */
  deadAtHoldEnd: Record<string, number>
  /** Runs accepted and not completed once the load stopped and they had 30 s. */
  lost: number
}

export interface HeldPhases {
  processes?: number
  clients?: number
  baselineMs?: number
  holdMs?: number
  afterMs?: number
}

/** What the scenario needs of a side. */
interface Side {
  /** Sends one run (job) with key `key`, until accepted; its id, or undefined when the client gave up. */
  send(client: number, key: string): Promise<string | undefined>
  /** How many runs have completed so far, evicted ones included. */
  completed(): Promise<number>
  /** The schema of the side's tables, for their dead tuples. */
  schema: string
  /** How many of `ids` are not completed. */
  unfinished(ids: string[]): Promise<number>
}

async function underHeldTransaction(
  setup: ScenarioSetup,
  db: postgres.Sql,
  side: Side,
  { clients = 32, baselineMs = 20_000, holdMs = 60_000, afterMs = 30_000 }: HeldPhases,
): Promise<HeldTransactionResult> {
  const accepted: string[] = []
  let stopped = false
  let inHold = 0
  let holding = false
  let sent = 0
  const loop = async (client: number) => {
    while (!stopped) {
      const id = await side.send(client, `held-${client}-${sent++}`)
      if (id === undefined) continue
      accepted.push(id)
      if (holding) inHold++
    }
  }
  const clientsDone = Promise.all(Array.from({ length: clients }, (_, i) => loop(i)))
  const completed = async () => ({ n: await side.completed(), at: performance.now() })
  const rate = (from: { n: number; at: number }, to: { n: number; at: number }) => Math.round(((to.n - from.n) / (to.at - from.at)) * 1000)
  // A warm-up the baseline does not count: connections, JIT, caches.
  await sleep(Math.min(3000, baselineMs / 4))
  const baselineFrom = await completed()
  await sleep(baselineMs)
  const release = await holdTransaction(setup.url)
  const holdFrom = await completed()
  holding = true
  await sleep((holdMs * 2) / 3)
  const holdEndFrom = await completed()
  await sleep(holdMs / 3)
  const holdTo = await completed()
  const dead = await db<{ relname: string; n_dead_tup: string }[]>`
    SELECT relname, n_dead_tup::text FROM pg_stat_user_tables WHERE schemaname = ${side.schema} ORDER BY n_dead_tup DESC`
  holding = false
  await release()
  const afterFrom = await completed()
  await sleep(afterMs)
  const afterTo = await completed()
  stopped = true
  await clientsDone
  const until = Date.now() + 30_000
  let lost = accepted.length
  while (Date.now() < until) {
    lost = await side.unfinished(accepted)
    if (lost === 0) break
    await sleep(200)
  }
  return {
    baselinePerSecond: rate(baselineFrom, holdFrom),
    holdPerSecond: rate(holdFrom, holdTo),
    holdEndPerSecond: rate(holdEndFrom, holdTo),
    afterPerSecond: rate(afterFrom, afterTo),
    triggeredInHold: inHold,
    deadAtHoldEnd: Object.fromEntries(dead.map((row) => [row.relname, Number(row.n_dead_tup)])),
    lost,
  }
}

/** A connection of the benchmark's own, named so that no fault takes it for a worker's. */
const connect = (url: string) => postgres(url, { onnotice: () => {}, max: 1, connection: { application_name: 'chaos' } })

/** svc's side. */
export async function heldTransaction(setup: ScenarioSetup, phases: HeldPhases = {}): Promise<HeldTransactionResult> {
  // The store's own pollMs: how often each idle process sweeps is part of what the hold costs.
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'held-transaction.log'), pollMs: 1000, leaseMs: 30_000 })
  const db = connect(setup.url)
  try {
    const on = await cluster.start(phases.processes ?? 2)
    return await underHeldTransaction(
      setup,
      db,
      {
        send: (client, key) => cluster.trigger(on[client % on.length], 'chaos.noop', key, Date.now() + 10_000),
        // Each run takes the next value of runs_finished_seq as it finishes:
        // finished runs past maxRuns are evicted, so the table cannot be counted.
        completed: async () => {
          const [{ n }] = await db<{ n: string }[]>`SELECT last_value::text AS n FROM svc.runs_finished_seq`
          return Number(n)
        },
        schema: 'svc',
        // A run evicted after it finished is gone from the table: only those still there and not completed are left.
        unfinished: async (ids) => {
          const [{ n }] = await db<{ n: number }[]>`
          SELECT count(*)::int AS n FROM svc.runs WHERE id = ANY(${ids}::text[]) AND status <> 'completed'`
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

/** pg-boss's side. */
export async function pgbossHeldTransaction(setup: ScenarioSetup, phases: HeldPhases = {}): Promise<HeldTransactionResult> {
  const cluster = await PgBossCluster.open(setup.url, join(setup.dir, 'held-transaction.log'))
  const db = connect(setup.url)
  try {
    await cluster.start(phases.processes ?? 2)
    return await underHeldTransaction(
      setup,
      db,
      {
        send: (_, key) => cluster.send('chaos.noop', key, Date.now() + 10_000),
        // Completed jobs stay in the table for the length of this scenario (pg-boss deletes them after days).
        completed: async () => {
          const [{ n }] = await db<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'chaos.noop' AND state = 'completed'`
          return n
        },
        schema: 'pgboss',
        unfinished: async (ids) => {
          const [{ n }] = await db<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY(${ids}::uuid[]) AND state <> 'completed'`
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
