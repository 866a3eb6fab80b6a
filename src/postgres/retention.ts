/**
 * Retention on Postgres (`RunStore.pruneFinished`, docs/stores.md
 * "Retention"): one transaction that deletes, of a task's `limit` runs
 * that finished first, those that finished before a moment, with their
 * tokens (their steps go through the foreign key).
 */
import type { Sql } from 'postgres'
import { inTransaction } from './transaction.ts'

export function pruneFinished(sql: Sql, schema: string, taskName: string, before: string, limit: number): Promise<number> {
  return inTransaction(sql, async (tx) => {
    const runs = tx(schema)
    // `run_counts` first, as an insert takes it: each deleted run updates it
    // through the count trigger, and taking the rows first and the count
    // second, against an insert that evicts, would deadlock.
    await tx`SELECT 1 FROM ${runs}.run_counts FOR UPDATE`
    const [{ gone }] = await tx<{ gone: number }[]>`
      WITH expired AS (
        SELECT id FROM (
          SELECT id, record FROM ${runs}.runs
          WHERE task_name = ${taskName} AND finished_seq IS NOT NULL
          ORDER BY finished_seq LIMIT ${limit}
        ) first_finished
        WHERE (record ->> 'finishedAt')::timestamptz < ${before}::timestamptz
      ), deleted AS (
        DELETE FROM ${runs}.runs WHERE id IN (SELECT id FROM expired) AND finished_seq IS NOT NULL RETURNING id
      ), tokens AS (
        DELETE FROM ${runs}.tokens WHERE run_id IN (SELECT id FROM deleted)
      )
      SELECT count(*)::int AS gone FROM deleted`
    return gone
  })
}
