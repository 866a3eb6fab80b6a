/**
 * `updateRun` on Postgres, many calls in one statement: the calls made
 * while one is in flight go together (group-commit.ts), and each row of
 * the batch is changed as its call alone would change it. Each call is a
 * compare-and-set: its row changes only while the run's status is one it
 * expects, and, for the end of an attempt under a lease held here, only
 * while the lease's fence is the one its claim set (fences.ts). A call
 * whose condition fails changes nothing and gets no row back.
 *
 * The patch, or the appended attempt, is applied to the `jsonb` record
 * inside the statement rather than read, changed and written back. A run
 * that finishes takes the next eviction position; one that stays finished
 * keeps its own; a live one has none. A run made running (its provisional
 * lease) or cancelled moves its fence on: the attempt of whoever held it
 * before writes nothing more. An attempt that finishes its run under its
 * lease gives the lease up in the same statement (`releases`): a finished
 * run is never claimed again, so the release that follows the end
 * (`releaseLeases`) has nothing left to write.
 */
import type { Sql } from 'postgres'
import { FINISHED_STATUSES, type RunPatch } from '../runtime/tasks/store/store.ts'
import type { RunRecord, RunStatus } from '../types.ts'
import type { Fence } from './fences.ts'
import { wholeRecord } from './records.ts'

export interface RunUpdate {
  id: string
  patch: RunPatch
  expect: { status: RunStatus | readonly RunStatus[] } | undefined
  /** The fence of the lease held here, for the end of an attempt. */
  fence: Fence | undefined
}

/** A row of the batch, as the statement reads it (`jsonb_to_recordset`). */
interface BatchRow {
  i: number
  id: string
  removed: string[]
  changes: Record<string, unknown>
  attempts: unknown[]
  next: RunStatus | null
  expected: RunStatus[] | null
  held_by: string | null
  held_fence: string | null
  releases: boolean
}

function batchRow(update: RunUpdate, i: number): BatchRow {
  const { patch, expect, fence } = update
  const removed: string[] = []
  const changes: Record<string, unknown> = {}
  for (const key in patch) {
    const value = (patch as Record<string, unknown>)[key]
    if (key === 'attempt') continue
    if (value === undefined) removed.push(key)
    else changes[key] = value
  }
  const next = typeof patch.status === 'string' ? patch.status : null
  return {
    i,
    id: update.id,
    removed,
    changes,
    // Appended to `attempts` (an empty array when there is none).
    attempts: patch.attempt === undefined ? [] : [patch.attempt],
    next,
    expected: expect === undefined ? null : typeof expect.status === 'string' ? [expect.status] : [...expect.status],
    held_by: fence?.owner ?? null,
    held_fence: fence?.fence ?? null,
    releases: fence !== undefined && next !== null && FINISHED_STATUSES.includes(next),
  }
}

/**
 * Applies `updates` (at most one per run) in one statement; answers each
 * with the run as it now is, or `undefined` when its condition failed or
 * the store holds no such run. `released` names the runs whose lease the
 * statement gave up.
 */
export async function updateRunsPg(
  sql: Sql,
  schema: string,
  leaseMs: number,
  updates: readonly RunUpdate[],
): Promise<{ runs: (RunRecord | undefined)[]; released: string[] }> {
  const batch = updates.map(batchRow)
  const rows = await sql<{ i: number; releases: boolean; record: RunRecord }[]>`
    UPDATE ${sql(schema)}.runs SET
      record = jsonb_set((runs.record - b.removed) || b.changes,
        '{attempts}', coalesce(runs.record->'attempts', '[]') || b.attempts),
      status = coalesce(b.next, runs.status),
      finished_seq = CASE WHEN coalesce(b.next, runs.status) = ANY(${FINISHED_STATUSES as string[]}::text[])
        THEN coalesce(runs.finished_seq, nextval(${`${schema}.runs_finished_seq`}::regclass)) END,
      lease_owner = CASE WHEN b.releases THEN NULL ELSE runs.lease_owner END,
      lease_expires_at = CASE WHEN b.releases THEN NULL
        WHEN b.next = 'running' AND runs.status <> 'running' THEN now() + ${leaseMs} * interval '1 millisecond'
        ELSE runs.lease_expires_at END,
      lease_fence = CASE WHEN b.next IN ('running', 'cancelled') AND runs.status <> b.next
        THEN runs.lease_fence + 1 ELSE runs.lease_fence END
    FROM jsonb_to_recordset(${sql.json(batch as never)}::jsonb) AS b(
      i int, id text, removed text[], changes jsonb, attempts jsonb, next text, expected text[],
      held_by text, held_fence bigint, releases boolean)
    WHERE runs.id = b.id AND (b.expected IS NULL OR runs.status = ANY(b.expected))
      AND (b.held_by IS NULL OR (runs.lease_owner = b.held_by AND runs.lease_fence = b.held_fence))
    RETURNING b.i, b.releases, ${wholeRecord(sql, schema)} AS record`
  const runs: (RunRecord | undefined)[] = new Array(updates.length).fill(undefined)
  const released: string[] = []
  for (const row of rows) {
    runs[row.i] = row.record
    if (row.releases) released.push(updates[row.i].id)
  }
  return { runs, released }
}
