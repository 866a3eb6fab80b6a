/**
 * `saveTimer` on Postgres, many timers in one statement: the calls made
 * while one is in flight go together (group-commit.ts). Each is upserted
 * as alone: an upsert keeps the timer's place in `listTimers`, as
 * `Map#set` does, and clears a claim on it. A timer an attempt sets for
 * itself under a lease held here (`fence`: its retry, its sleeps' and token
 * waits' deadlines) is saved only while the fence holds; the run's row is
 * locked `FOR KEY SHARE` to the end of the statement, as #leaseRow in
 * store.ts explains. Two saves of one batch must not share a timer id.
 */
import type { PendingQuery, Sql } from 'postgres'
import type { TimerRecord } from '../runtime/tasks/store/store.ts'
import type { Fence } from './fences.ts'

export interface TimerSave {
  timer: TimerRecord
  /** The fence of the lease held here on the timer's run, for a timer of its attempt. */
  fence: Fence | undefined
}

/** The statement that saves `saves`; it answers the index of each save it wrote (a fenced one whose lease is lost is not). */
export function saveTimersPg(sql: Sql, schema: string, saves: readonly TimerSave[]): PendingQuery<{ i: number }[]> {
  const batch = saves.map(({ timer, fence }, i) => ({
    i,
    id: timer.id,
    run_id: timer.runId,
    kind: timer.kind,
    due_at: timer.dueAt,
    record: timer,
    held_by: fence?.owner ?? null,
    held_fence: fence?.fence ?? null,
  }))
  const timers = sql(schema)
  return sql<{ i: number }[]>`
    WITH b AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${sql.json(batch as never)}::jsonb) AS b(
        i int, id text, run_id text, kind text, due_at timestamptz, record jsonb, held_by text, held_fence bigint)
    ), lease AS (
      SELECT b.i FROM b JOIN ${timers}.runs ON runs.id = b.run_id AND runs.lease_owner = b.held_by AND runs.lease_fence = b.held_fence
      WHERE b.held_by IS NOT NULL
      FOR KEY SHARE OF runs
    ), saved AS (
      INSERT INTO ${timers}.timers (id, run_id, kind, due_at, record)
      SELECT b.id, b.run_id, b.kind, b.due_at, b.record FROM b WHERE b.held_by IS NULL OR b.i IN (SELECT i FROM lease)
      ORDER BY b.i
      ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, kind = excluded.kind, due_at = excluded.due_at,
        claimed_by = NULL, claim_expires_at = NULL, record = excluded.record
      RETURNING id
    )
    SELECT b.i FROM b JOIN saved ON saved.id = b.id`
}
