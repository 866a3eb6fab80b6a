/**
 * Fenced writes on a SQLite file several processes share.
 *
 * A running run's `owner` is the store whose process runs its attempt
 * (owners.ts), and `owner_fence` counts the claims of the run:
 * inserting it running, making it running (a resume, a delay over, flow
 * control's start), taking it over (`claimRunning`) and cancelling it each
 * move the fence on. A store keeps, for each run it holds, the fence its
 * claim set (`SqliteRunStore`'s `#fences`), and the writes of the attempt
 * check both: its steps, its end (`updateRun` expecting `running` and
 * nothing else) and its attempts in the statement that writes them, which
 * every run pays for; the children it starts (`createRun` and `debounceRun`
 * with its `parentRunId`), its tokens and the timers it sets for itself (a
 * retry, a sleep, a token's timeout) with a lookup (`HELD`) in the same
 * savepoint, right before the write.
 * A process that froze past `STALE_MS` (a pause, SIGSTOP, a stopped
 * container) and whose run another process took over meanwhile writes
 * nothing more for it: each such write changes no row, fails its own
 * savepoint alone (the batch keeps the others' writes) and rejects with
 * `LeaseLostError`, and the engine aborts the attempt.
 *
 * The check reads the file, never the store's row cache: another process's
 * claim changes rows this connection has cached. Every write runs in a
 * batch that holds the file's write lock, and the batch empties the cache
 * when another connection committed since (`PRAGMA data_version`, checked
 * once the lock is taken), so the check and the write see the same row and
 * nobody can claim the run in between.
 *
 * What is not an attempt's write is not fenced: a cancel (which wins from
 * any process and moves the fence on itself), and the resume of a
 * suspended run by whichever process met its wait (the waited step, then
 * the run made running, which makes that process its owner). A store
 * forgets a run's fence when it writes the run out of `running`: its
 * attempt is over.
 */
/** Whether run `id` is still held by `owner` under `owner_fence`: one row if so. */
export const HELD = 'SELECT 1 FROM svc_runs WHERE id = ? AND owner = ? AND owner_fence = ?'

/** `UPDATE_RUN_OWNED` for the attempt's end: lands only while the store still holds the run under its fence. */
export const UPDATE_RUN_FENCED =
  'UPDATE svc_runs SET status = ?, finished_seq = ?, record = ? WHERE seq = ? AND owner = ? AND owner_fence = ?'

/** `UPDATE_RUN_RECORD` (an attempt appended) under the fence. */
export const UPDATE_RUN_RECORD_FENCED = 'UPDATE svc_runs SET record = ? WHERE seq = ? AND owner = ? AND owner_fence = ?'

/**
 * `UPSERT_STEP` under the fence: the row is inserted only while the store
 * holds the run, or when the step is the one the suspended run waits on
 * (whoever met the wait records it). Parameters: key, record, the run's
 * seq, owner, fence, key again. The SELECT's WHERE clause also keeps
 * SQLite from reading ON CONFLICT as a join constraint
 * (https://www.sqlite.org/lang_upsert.html, "Parsing Ambiguity").
 */
export const UPSERT_STEP_FENCED = `INSERT INTO svc_steps (run_seq, key, record)
  SELECT seq, ?, ? FROM svc_runs
  WHERE seq = ? AND ((owner = ? AND owner_fence = ?) OR (status = 'suspended' AND json_extract(record, '$.suspended.stepKey') = ?))
  ON CONFLICT (run_seq, key) DO UPDATE SET record = excluded.record`
