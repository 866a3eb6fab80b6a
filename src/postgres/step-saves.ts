/**
 * `saveStep` on Postgres, many steps in one statement: the calls made
 * while one is in flight go together (group-commit.ts). Each is a row of
 * the steps table, inserted or overwritten, as alone:
 *
 * - under a lease held here (`fence`), only while its fence holds, but for
 *   the step a suspended run waits on: whoever met the wait records it
 *   (`Waitpoints`), lease or not. The run's row is locked `FOR KEY SHARE`
 *   to the end of the statement, as #leaseRow in store.ts explains;
 * - without one, unfenced; the foreign key refuses a run the store does
 *   not hold, and the whole statement with it.
 *
 * Two saves of one batch must not name the same step (`stepKey`): the
 * upsert cannot change a row twice.
 */
import type { PendingQuery, Sql } from 'postgres'
import type { StepRecord } from '../types.ts'
import type { Fence } from './fences.ts'

export interface StepSave {
  runId: string
  key: string
  step: StepRecord
  /** The fence of the lease held here on the run, if any. */
  fence: Fence | undefined
}

/** The row a save writes, which no two saves of one batch may share. */
export function stepKey(save: StepSave): string {
  return `${save.runId}\n${save.key}`
}

/** The statement that saves `saves`; it answers the index of each save it wrote (a fenced one whose lease is lost is not). */
export function saveStepsPg(sql: Sql, schema: string, saves: readonly StepSave[]): PendingQuery<{ i: number }[]> {
  const batch = saves.map((save, i) => ({
    i,
    run_id: save.runId,
    key: save.key,
    record: save.step,
    held_by: save.fence?.owner ?? null,
    held_fence: save.fence?.fence ?? null,
  }))
  const steps = sql(schema)
  return sql<{ i: number }[]>`
    WITH b AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${sql.json(batch as never)}::jsonb) AS b(
        i int, run_id text, key text, record jsonb, held_by text, held_fence bigint)
    ), lease AS (
      SELECT b.i FROM b JOIN ${steps}.runs ON runs.id = b.run_id
        AND ((runs.lease_owner = b.held_by AND runs.lease_fence = b.held_fence)
          OR (runs.status = 'suspended' AND runs.record #>> '{suspended,stepKey}' = b.key))
      WHERE b.held_by IS NOT NULL
      FOR KEY SHARE OF runs
    ), saved AS (
      INSERT INTO ${steps}.steps (run_id, key, record)
      SELECT b.run_id, b.key, b.record FROM b WHERE b.held_by IS NULL OR b.i IN (SELECT i FROM lease)
      ORDER BY b.i
      ON CONFLICT (run_id, key) DO UPDATE SET record = excluded.record
      RETURNING run_id, key
    )
    SELECT b.i FROM b JOIN saved ON saved.run_id = b.run_id AND saved.key = b.key`
}
