/**
 * The writes of a run's row and steps by a `SqliteRunStore` (store.ts), on
 * its connection (connection.ts): each runs inside a write of the batch,
 * keeps the row cache and the counts in step, and moves the fences
 * (fences.ts, owners.ts) as the run enters and leaves `running` here.
 */
import { LeaseLostError, StoreFullError } from '../runtime/errors.ts'
import { applyRunPatch, isFinished, type RunPatch, statusMatches } from '../runtime/tasks/store/store.ts'
import { insertRunValues, RUN_EXISTS, SELECT_RUN_BY_KEY, UPDATE_RUN_RECORD, UPSERT_STEP } from '../runtime/tasks/sql/queries.ts'
import { expectsRunning } from '../runtime/tasks/engine/fenced-writes.ts'
import { jsonCopy } from '../runtime/tasks/base/json-copy.ts'
import { rowText, wholeText } from '../runtime/tasks/sql/record-text.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { SqliteConnection } from './connection.ts'
import { WHERE } from './connection.ts'
import { METADATA_WRITES, metadataChange } from '../runtime/tasks/sql/search.ts'
import { UPDATE_RUN_FENCED, UPDATE_RUN_RECORD_FENCED, UPSERT_STEP_FENCED } from './fences.ts'
import { LEASE_ON_CREATE, PROVISIONAL_LEASE } from './leases.ts'
import { INSERT_RUN_OWNED, UPDATE_RUN_CANCELLED, UPDATE_RUN_CLAIMED, UPDATE_RUN_OWNED } from './owners.ts'

// https://www.sqlite.org/rescode.html#constraint_unique
const SQLITE_CONSTRAINT_UNIQUE = 2067

/** `createRun` inside a write; `leaseOwner` as `createRun` takes it, on a shared file. */
export function insertRun(conn: SqliteConnection, run: RunRecord, leaseOwner?: string): RunRecord {
  // A child of an attempt's run: started only while the attempt holds it.
  if (run.parentRunId !== undefined) conn.checkHeld(run.parentRunId)
  const record = rowText(run)
  // The record as the file holds it: the store's own, and the copy returned.
  const stored = jsonCopy(run)
  const exists = () => new Error(`${WHERE}: run "${run.id}" already exists`)
  // The run holding its idempotency key, if another does; looked up only
  // when the insert cannot go in, as most keys are new.
  const keyHolder = (): RunRecord | undefined => {
    if (run.idempotencyKey === undefined) return undefined
    const holder = conn.sql(SELECT_RUN_BY_KEY).get(run.taskName, run.idempotencyKey) as { record: string } | undefined
    if (!holder) return undefined
    const held = JSON.parse(holder.record) as RunRecord
    if (held.id === run.id) throw exists()
    return held
  }
  // Counted inside the write lock, so processes sharing the file cannot
  // both take the last place. Live runs are never evicted.
  const counts = conn.countsNow()
  const live = !isFinished(run.status)
  if (live && counts.live >= conn.maxRuns) {
    const held = keyHolder()
    if (held) return held
    throw new StoreFullError(WHERE, conn.maxRuns)
  }
  const finishSeq = conn.finishSeq(run.status, null)
  // The owner the row records: this store for a run written running (owners.ts).
  const owner = run.status === 'running' ? conn.owner : null
  let inserted: { lastInsertRowid: number | bigint }
  try {
    inserted = conn.sql(INSERT_RUN_OWNED).run(...insertRunValues(run, finishSeq, record), owner, owner === null ? 0 : 1)
  } catch (error) {
    // The UNIQUE constraints of the key and the id are the checks: one statement, not lookups before it.
    if ((error as { errcode?: number }).errcode === SQLITE_CONSTRAINT_UNIQUE) {
      const held = keyHolder()
      if (held) {
        // The place in the order of finishing it took goes back, as no row took it.
        if (finishSeq !== null) counts.lastFinished = finishSeq - 1
        return held
      }
      if (conn.sql(RUN_EXISTS).get(run.id)) throw exists()
    }
    throw error
  }
  const seq = Number(inserted.lastInsertRowid)
  // Its tag rows (search.ts), written with the batch's others right before its COMMIT (pending-tags.ts).
  conn.tags.add(run.tags, seq)
  for (const key in stored.steps) conn.sql(UPSERT_STEP).run(seq, key, JSON.stringify(stored.steps[key]))
  if (owner !== null) madeRunning(conn, run.id, seq, 1, leaseOwner)
  conn.cache(run.id, seq, finishSeq, live ? stored : undefined, live ? record : wholeText(stored, record))
  counts.total++
  if (live) counts.live++
  if (counts.total > conn.maxRuns) conn.evictAtCommit = true
  return live ? jsonCopy(stored) : stored
}

/**
 * A run made running here (created, resumed, started by flow control),
 * under `fence`: this store holds it; with `shared`, it gets a lease
 * nobody holds, which a dispatch then takes (`acquireLease`), as on
 * Postgres, and only that lease fences the attempt's writes; or, for a
 * run triggered by engine `leaseOwner` (`leasesOnCreate`), a lease that
 * engine holds, under `fence`.
 */
export function madeRunning(conn: SqliteConnection, id: string, seq: number, fence: number, leaseOwner?: string): void {
  if (conn.leaseMs === undefined) conn.fences.set(id, fence)
  else if (leaseOwner === undefined) conn.sql(PROVISIONAL_LEASE).run(Date.now() + conn.leaseMs, seq)
  else {
    conn.sql(LEASE_ON_CREATE).run(leaseOwner, Date.now() + conn.leaseMs, seq)
    conn.fences.set(id, fence)
  }
}

/** `updateRun` inside a write: the compare-and-set of `expect`, then the row and the cache. */
export function updateRunRow(
  conn: SqliteConnection,
  id: string,
  patch: RunPatch,
  expect: { status: RunStatus | readonly RunStatus[] } | undefined,
  shared: boolean,
): RunRecord | undefined {
  // An attempt's end is fenced; a cancel or a resume is not.
  const fence = expectsRunning(expect) ? conn.fences.get(id) : undefined
  const row = conn.row(id)
  if (!row) {
    if (fence !== undefined) throw new LeaseLostError(id)
    return undefined
  }
  const run = conn.parsed(id, row)
  // The check and the write share one transaction: the compare-and-set.
  if (expect && !statusMatches(run.status, expect.status)) {
    // Held here, the run is running: only another process (a cancel,
    // which moves the fence on) ends it outside its attempt.
    if (fence !== undefined) throw new LeaseLostError(id)
    return undefined
  }
  const was = run.status
  // Each value as JSON keeps it; undefined stays, to remove its field.
  const copied: Record<string, unknown> = {}
  for (const key in patch) copied[key] = jsonCopy((patch as Record<string, unknown>)[key])
  applyRunPatch(run, copied as RunPatch)
  const record = rowText(run)
  const finishSeq = conn.finishSeq(run.status, row.finished_seq)
  writeRun(conn, id, row.seq, was, run.status, finishSeq, record, fence, shared)
  const metadata = metadataChange(patch)
  if (metadata) {
    conn.sql(METADATA_WRITES[0]).run(row.seq)
    conn.sql(METADATA_WRITES[1]).run(row.seq, metadata.json)
  }
  conn.cache(id, row.seq, finishSeq, finishSeq === null ? run : undefined, finishSeq === null ? record : wholeText(run, record))
  const counts = conn.counts
  if ((finishSeq === null) !== (row.finished_seq === null) && counts) counts.live += finishSeq === null ? 1 : -1
  if (finishSeq !== null && row.finished_seq === null && conn.countsNow().total > conn.maxRuns) conn.evictAtCommit = true
  // A finished run is cached as its text: the record is nobody else's.
  return finishSeq === null ? jsonCopy(run) : run
}

/**
 * The row write of `updateRun`, and what it does to the fences: a run
 * made running here is held here under its next fence; a cancel moves
 * the fence on; an attempt's end (`fence`) lands only while the run is
 * still held under it. A run written out of running is no longer held.
 */
function writeRun(
  conn: SqliteConnection,
  id: string,
  seq: number,
  was: RunStatus,
  status: RunStatus,
  finishSeq: number | null,
  record: string,
  fence: number | undefined,
  shared: boolean,
): void {
  const owner = conn.owner
  if (status === 'running' && was !== 'running') {
    const claimed = conn.sql(UPDATE_RUN_CLAIMED).get(status, finishSeq, record, owner, seq) as { owner_fence: number }
    madeRunning(conn, id, seq, claimed.owner_fence)
    return
  }
  if (status === 'cancelled' && was !== 'cancelled') {
    if (fence !== undefined) conn.checkHeld(id)
    conn.sql(UPDATE_RUN_CANCELLED).run(status, finishSeq, record, seq)
  } else if (fence === undefined) {
    conn.sql(UPDATE_RUN_OWNED).run(status, finishSeq, record, status === 'running' ? owner : null, seq)
  } else if (conn.sql(UPDATE_RUN_FENCED).run(status, finishSeq, record, seq, owner, fence).changes === 0) {
    throw new LeaseLostError(id)
  }
  if (status !== 'running' && !shared) conn.fences.delete(id)
}

/** `appendAttempt` inside a write: fenced while the store holds the run (an attempt's own). */
export function appendAttemptRow(conn: SqliteConnection, runId: string, attempt: Attempt): void {
  const fence = conn.fences.get(runId)
  const row = conn.row(runId)
  if (!row) throw conn.unknownRun(runId, fence)
  const run = conn.parsed(runId, row)
  run.attempts.push(jsonCopy(attempt))
  const record = rowText(run)
  if (fence === undefined) conn.sql(UPDATE_RUN_RECORD).run(record, row.seq)
  else if (conn.sql(UPDATE_RUN_RECORD_FENCED).run(record, row.seq, conn.owner, fence).changes === 0) throw new LeaseLostError(runId)
  const live = row.finished_seq === null
  conn.cache(runId, row.seq, row.finished_seq, live ? run : undefined, live ? record : wholeText(run, record))
}

/** Writes step `key` of run `runId` (`fenced`: under the fence this store holds it with) and keeps the cache in step. */
export function putStep(conn: SqliteConnection, runId: string, key: string, text: string, fenced: boolean): void {
  const fence = fenced ? conn.fences.get(runId) : undefined
  const row = conn.row(runId)
  if (!row) throw conn.unknownRun(runId, fence)
  if (fence === undefined) conn.sql(UPSERT_STEP).run(row.seq, key, text)
  else if (conn.sql(UPSERT_STEP_FENCED).run(key, text, row.seq, conn.owner, fence, key).changes === 0) {
    throw new LeaseLostError(runId)
  }
  // The cached record follows: a live run's parsed record takes the step,
  // a finished run's text is read again when next asked for.
  if (row.finished_seq !== null) return void conn.uncache(runId)
  const run = conn.parsed(runId, row)
  run.steps[key] = JSON.parse(text) as StepRecord
  conn.grew(runId, text.length)
}
