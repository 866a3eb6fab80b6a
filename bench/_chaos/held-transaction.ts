/**
 * idle_in_tx of the chaos harness: a transaction left open (`BEGIN;
 * SELECT txid_current()`) keeps vacuum from removing any row version that
 * changed after it began, so every row updated over and over grows a chain
 * of dead versions that each update walks. svc server processes take a
 * steady closed-loop load (clients that each trigger `chaos.noop` again as
 * soon as the last trigger was answered) through a baseline, the hold and
 * after it; the runs completed in each phase give its throughput, and the
 * dead tuples of svc's tables are read at the end of the hold.
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { Cluster } from './cluster.ts'
import { holdTransaction } from './faults.ts'
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
  /** Dead tuples of each of svc's tables at the end of the hold, most first. */
  deadAtHoldEnd: Record<string, number>
  /** Runs accepted and not completed once the load stopped and they had 30 s. */
  lost: number
}

export async function heldTransaction(
  setup: ScenarioSetup,
  { processes = 2, clients = 32, baselineMs = 20_000, holdMs = 60_000, afterMs = 30_000 } = {},
): Promise<HeldTransactionResult> {
  // The store's own pollMs: how often each idle process sweeps is part of what the hold costs.
  const cluster = new Cluster({ url: setup.url, effects: join(setup.dir, 'held-transaction.log'), pollMs: 1000, leaseMs: 30_000 })
  const db = postgres(setup.url, { onnotice: () => {}, max: 1, connection: { application_name: 'chaos' } })
  try {
    const on = await cluster.start(processes)
    const accepted: string[] = []
    let stopped = false
    let inHold = 0
    let holding = false
    let sent = 0
    const loop = async (client: number) => {
      while (!stopped) {
        const id = await cluster.trigger(on[client % on.length], 'chaos.noop', `held-${client}-${sent++}`, Date.now() + 10_000)
        if (id === undefined) continue
        accepted.push(id)
        if (holding) inHold++
      }
    }
    const clientsDone = Promise.all(Array.from({ length: clients }, (_, i) => loop(i)))
    // Runs finished so far: each takes the next value of runs_finished_seq as
    // it finishes (finished runs past maxRuns are evicted, so the table
    // cannot be counted), read at the edges of each phase.
    const finished = async () => {
      const [{ n }] = await db<{ n: string }[]>`SELECT last_value::text AS n FROM svc.runs_finished_seq`
      return { n: Number(n), at: performance.now() }
    }
    const rate = (from: { n: number; at: number }, to: { n: number; at: number }) =>
      Math.round(((to.n - from.n) / (to.at - from.at)) * 1000)
    // A warm-up the baseline does not count: connections, JIT, caches.
    await sleep(Math.min(3000, baselineMs / 4))
    const baselineFrom = await finished()
    await sleep(baselineMs)
    const release = await holdTransaction(setup.url)
    const holdFrom = await finished()
    holding = true
    await sleep((holdMs * 2) / 3)
    const holdEndFrom = await finished()
    await sleep(holdMs / 3)
    const holdTo = await finished()
    const dead = await db<{ relname: string; n_dead_tup: string }[]>`
      SELECT relname, n_dead_tup::text FROM pg_stat_user_tables WHERE schemaname = 'svc' ORDER BY n_dead_tup DESC`
    holding = false
    await release()
    const afterFrom = await finished()
    await sleep(afterMs)
    const afterTo = await finished()
    stopped = true
    await clientsDone
    const result = {
      baselinePerSecond: rate(baselineFrom, holdFrom),
      holdPerSecond: rate(holdFrom, holdTo),
      holdEndPerSecond: rate(holdEndFrom, holdTo),
      afterPerSecond: rate(afterFrom, afterTo),
      triggeredInHold: inHold,
      deadAtHoldEnd: Object.fromEntries(dead.map((row) => [row.relname, Number(row.n_dead_tup)])),
    }
    const until = Date.now() + 30_000
    let left = accepted.length
    while (Date.now() < until) {
      // A run evicted after it finished is gone from the table: only those still there and not completed are left.
      const [{ n }] = await db<{ n: number }[]>`
        SELECT count(*)::int AS n FROM svc.runs WHERE id = ANY(${accepted}::text[]) AND status <> 'completed'`
      left = n
      if (left === 0) break
      await sleep(200)
    }
    return { ...result, lost: left }
  } finally {
    await db.end()
    await cluster.close()
  }
}
