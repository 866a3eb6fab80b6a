/**
 * The SQL of a SQLite file that processes share as a `SharedWork` store
 * (`SqliteRunStore` with `shared: true`, shared-work.ts): leases on
 * running attempts, claims on due timers, cron ticks and wake-ups.
 *
 * Times are epoch milliseconds from the writing process's clock: every
 * process on one SQLite file runs on one host (a WAL file cannot be shared
 * over a network file system, https://www.sqlite.org/wal.html), so they
 * read one clock.
 *
 * Each claim is one statement inside the store's write batch, which holds
 * the file's write lock: of several processes claiming at once, one gets
 * each row, and nobody waits on a row another is claiming.
 */

// The columns and tables these statements use (schema version 5, and the
// processes table of version 10) are made by the migration chain
// (src/runtime/tasks/sql/file-tables.ts).

/**
 * `UPSERT_TIMER` (sql/queries.ts) with the due time, clearing any claim:
 * a timer saved again while its claimer acts on the old one (the next
 * retry of the same run) is a new timer, which `finishTimer` keeps.
 */
export const UPSERT_TIMER_DUE = `INSERT INTO svc_timers (id, run_id, due_at, record) VALUES (?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, due_at = excluded.due_at, record = excluded.record,
    claimed_by = NULL, claim_until = NULL`

/** A run made running (created, resumed, started by flow control): a lease nobody holds yet, until the given time. */
export const PROVISIONAL_LEASE = 'UPDATE svc_runs SET lease_until = ? WHERE seq = ?'
/** A run inserted running for the engine that triggered it (`leasesOnCreate`): its lease, held by that engine, under the insert's fence. */
export const LEASE_ON_CREATE = 'UPDATE svc_runs SET lease_owner = ?, lease_until = ? WHERE seq = ?'

// Parameters, for the claims below: the claimer, when its claim lapses, now.
export const CLAIM_DUE_TIMERS = `UPDATE svc_timers SET claimed_by = ?1, claim_until = ?2
  WHERE seq IN (
    SELECT seq FROM svc_timers WHERE due_at <= ?4 AND (claim_until IS NULL OR claim_until < ?3) ORDER BY due_at LIMIT ?5
  )
  RETURNING record, due_at`
export const CLAIM_TIMER = `UPDATE svc_timers SET claimed_by = ?1, claim_until = ?2
  WHERE id = ?4 AND (claim_until IS NULL OR claim_until < ?3)
  RETURNING record`
export const FINISH_TIMER = 'DELETE FROM svc_timers WHERE id = ? AND claimed_by = ?'
export const NEXT_DUE_AT = 'SELECT due_at FROM svc_timers WHERE claim_until IS NULL OR claim_until < ? ORDER BY due_at LIMIT 1'

/**
 * Takes the lease on running run `?5` for owner `?1` until `?2`, unless
 * another owner holds a live one; this store (`?4`) becomes the run's
 * `owner`, under the next fence (fences.ts), which it returns.
 */
export const ACQUIRE_LEASE = `UPDATE svc_runs SET lease_owner = ?1, lease_until = ?2, owner = ?4, owner_fence = owner_fence + 1
  WHERE id = ?5 AND status = 'running' AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_until < ?3)
  RETURNING owner_fence`
/** Extends owner `?1`'s leases on the runs of the JSON array `?3` until `?2`; a cancelled run is not renewed. */
export const RENEW_LEASES = `UPDATE svc_runs SET lease_until = ?2
  WHERE id IN (SELECT value FROM json_each(?3)) AND lease_owner = ?1 AND status <> 'cancelled'
  RETURNING id`
/** A lease given up has no expiry: the attempt is anyone's at once. */
export const RELEASE_LEASES = `UPDATE svc_runs SET lease_owner = NULL, lease_until = NULL
  WHERE lease_owner = ? AND id IN (SELECT value FROM json_each(?))`
export const RELEASE_ALL_LEASES = `UPDATE svc_runs SET lease_owner = NULL, lease_until = NULL
  WHERE lease_owner = ? AND id NOT IN (SELECT value FROM json_each(?))`
export const RELEASE_TIMER_CLAIMS = 'UPDATE svc_timers SET claimed_by = NULL, claim_until = NULL WHERE claimed_by = ?'

/**
 * Takes the lease on up to `?5` orphaned runs for owner `?1` (the rules of
 * `SharedWork.claimOrphanedRuns`): running runs nobody holds that wait for
 * no retry timer (a retry's claimer starts the next attempt), suspended runs
 * whose lease lapsed (their process died between suspending and arming
 * the waitpoint; a lease given up has no expiry), and suspended runs nobody
 * holds whose child has finished (reached through an idempotency key, that
 * child resumes only the run that started it). Never a running run `?1`
 * holds: its dispatch of it is still in flight, however late its renewal;
 * a suspended one whose lease lapsed, yes: arming its wait failed there.
 */
export const CLAIM_ORPHANED_RUNS = `UPDATE svc_runs SET lease_owner = ?1, lease_until = ?2, owner = ?4, owner_fence = owner_fence + 1
  WHERE seq IN (
    SELECT r.seq FROM svc_runs r
    WHERE (r.lease_owner IS NULL OR r.lease_owner <> ?1 OR r.status = 'suspended') AND (
      (r.status = 'running' AND (r.lease_until IS NULL OR r.lease_until < ?3)
        AND NOT EXISTS (SELECT 1 FROM svc_timers t WHERE t.run_id = r.id AND json_extract(t.record, '$.kind') = 'retry'))
      OR (r.status = 'suspended' AND r.lease_owner IS NOT NULL AND r.lease_until < ?3)
      OR (r.status = 'suspended' AND (r.lease_until IS NULL OR r.lease_until < ?3)
        AND json_extract(r.record, '$.suspended.waitpoint.type') = 'task'
        AND EXISTS (
          SELECT 1 FROM svc_runs c
          WHERE c.id = json_extract(r.record, '$.suspended.waitpoint.runId') AND c.finished_seq IS NOT NULL
        ))
    ) AND (json_extract(r.record, '$.version') IS NULL
      OR r.task_name || '@' || json_extract(r.record, '$.version') NOT IN (SELECT value FROM json_each(?6)))
    ORDER BY r.seq LIMIT ?5
  )
  RETURNING id, owner_fence`

/** Ticks a day older than the one claimed can no longer be contested; they go as new ones come. */
export const PRUNE_TICKS = 'DELETE FROM svc_cron_ticks WHERE task_name = ? AND tick < ?'
export const CLAIM_TICK = 'INSERT OR IGNORE INTO svc_cron_ticks (task_name, tick) VALUES (?, ?)'

export const WAKE = 'UPDATE svc_wakes SET n = n + 1'
export const WAKES = 'SELECT n FROM svc_wakes'

/**
 * A process that serves the same versions as one registered before it,
 * live or gone within the hour, takes that one's start: a version is as
 * old as its first process, so an old release's process restarted during
 * a rollout does not pass for the newest (versions.ts orders by it).
 */
export const REGISTER_PROCESS = `INSERT INTO svc_processes (owner, versions, started_at, beat_at)
  VALUES (?1, ?2, coalesce((SELECT min(started_at) FROM svc_processes WHERE versions = ?2), ?3), ?3)
  ON CONFLICT (owner) DO UPDATE SET versions = excluded.versions, beat_at = excluded.beat_at`
/** Rows of processes gone for an hour go as others register. */
export const PRUNE_PROCESSES = 'DELETE FROM svc_processes WHERE beat_at < ?'
/** A process that shuts down is gone at once (its beat put past the lease), and its row stays for the hour, with its start. */
export const UNREGISTER_PROCESS = 'UPDATE svc_processes SET beat_at = ?2 WHERE owner = ?1'
export const LIVE_PROCESSES = 'SELECT owner, versions FROM svc_processes WHERE beat_at >= ? ORDER BY started_at DESC, owner'
