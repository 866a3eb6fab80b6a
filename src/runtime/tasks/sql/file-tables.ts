/**
 * The tables and columns only `SqliteRunStore`'s files have: those of the
 * processes that share a file (src/sqlite/owners.ts, fences.ts, leases.ts,
 * changes.ts). They are steps of the one migration chain of the SQLite
 * dialect (migrations.ts), which the Durable Object store runs too, so
 * they live here, beside the tables both stores share (schema.ts), rather
 * than beside the Node code that reads them. Each is the text of a released
 * schema version: never edit what it means. Edge-safe: no `node:` import.
 */

/**
 * Schema version 3: the process that holds each running run (`owner`),
 * and the processes on the file, each with a heartbeat (owners.ts).
 */
export const OWNERS_TABLE = `
  ALTER TABLE svc_runs ADD COLUMN owner INTEGER;
  CREATE TABLE svc_owners (owner INTEGER PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, ns TEXT NOT NULL, beat_at INTEGER NOT NULL);`

/**
 * Schema version 4: the fence of each run's owner (fences.ts). A
 * constant default adds the column without rewriting the table; a run
 * running when the file is upgraded is fenced from its next claim.
 */
export const OWNER_FENCE_COLUMN = 'ALTER TABLE svc_runs ADD COLUMN owner_fence INTEGER NOT NULL DEFAULT 0;'

/**
 * Schema version 5 (leases.ts). `runs.lease_owner` and `lease_until` are
 * the lease on a run's attempt; `timers.due_at` (the record's `dueAt`, ISO
 * text, which sorts as time does), `claimed_by` and `claim_until` the
 * claim on a timer. A file that is not shared keeps these columns empty
 * but for `due_at`, so it can be opened shared later with its timers due.
 * `owners.shared` says which stores opened the file shared: processes
 * that open it both ways at once would take each other's attempts.
 */
export const LEASE_COLUMNS = `
  ALTER TABLE svc_runs ADD COLUMN lease_owner TEXT;
  ALTER TABLE svc_runs ADD COLUMN lease_until INTEGER;
  ALTER TABLE svc_timers ADD COLUMN due_at TEXT;
  ALTER TABLE svc_timers ADD COLUMN claimed_by TEXT;
  ALTER TABLE svc_timers ADD COLUMN claim_until INTEGER;
  UPDATE svc_timers SET due_at = json_extract(record, '$.dueAt');
  CREATE INDEX svc_timers_by_due_at ON svc_timers (due_at);
  CREATE TABLE svc_cron_ticks (task_name TEXT NOT NULL, tick TEXT NOT NULL, PRIMARY KEY (task_name, tick)) WITHOUT ROWID;
  CREATE TABLE svc_wakes (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
  INSERT INTO svc_wakes (id, n) VALUES (0, 0);
  ALTER TABLE svc_owners ADD COLUMN shared INTEGER NOT NULL DEFAULT 0;`

/**
 * Schema version 8 (changes.ts). `at` is when the row was written, in
 * epoch milliseconds of the writing process (every process on the file
 * reads one clock); `payload` is a JSON array of `[id, taskName, status]`.
 * `change_listeners` holds the stores that listen (their `owners.owner`),
 * each until its row lapses.
 */
export const CHANGES_TABLE = `
  CREATE TABLE svc_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    owner TEXT NOT NULL,
    at INTEGER NOT NULL,
    payload TEXT NOT NULL
  );
  CREATE TABLE svc_change_listeners (owner INTEGER PRIMARY KEY, until INTEGER NOT NULL);`

/**
 * Schema version 10 (leases.ts): the processes on the file that serve
 * versions of their tasks (docs/deploying.md "Runs across deploys"), each
 * with the `<task>@<version>` keys it serves (a JSON array), when it
 * registered first and when last (ms since the epoch). A process not heard
 * from for `leaseMs` is gone.
 */
export const PROCESSES_TABLE = `
  CREATE TABLE svc_processes (owner TEXT PRIMARY KEY, versions TEXT NOT NULL, started_at INTEGER NOT NULL, beat_at INTEGER NOT NULL) WITHOUT ROWID;`
