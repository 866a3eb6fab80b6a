/**
 * Retention on Postgres (`RunStore.pruneFinished`, docs/stores.md
 * "Retention"): one statement that deletes, of a task's `limit` runs
 * that finished first, those that finished before a moment, with their
 * tokens and tag rows (run-tags.ts; their steps go through the foreign
 * key).
 */
import type { Sql } from 'postgres'
import { deleteTagRows } from './run-tags.ts'

export async function pruneFinished(sql: Sql, schema: string, taskName: string, before: string, limit: number): Promise<number> {
  const runs = sql(schema)
  const [{ gone }] = await sql<{ gone: number }[]>`
    WITH expired AS (
      SELECT id FROM (
        SELECT id, record FROM ${runs}.runs
        WHERE task_name = ${taskName} AND finished_seq IS NOT NULL
        ORDER BY finished_seq LIMIT ${limit}
      ) first_finished
      WHERE (record ->> 'finishedAt')::timestamptz < ${before}::timestamptz
    ), deleted AS (
      DELETE FROM ${runs}.runs WHERE id IN (SELECT id FROM expired) AND finished_seq IS NOT NULL RETURNING id, seq
    ), tags AS (${deleteTagRows(sql, schema, sql`deleted`)}
    ), tokens AS (
      DELETE FROM ${runs}.tokens WHERE run_id IN (SELECT id FROM deleted)
    )
    SELECT count(*)::int AS gone FROM deleted`
  return gone
}
