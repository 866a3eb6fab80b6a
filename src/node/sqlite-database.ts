/**
 * Opening a `SqliteRunStore` database: the connection, its pragmas and the
 * schema, versioned with `PRAGMA user_version` so a later release can
 * migrate a file an earlier one wrote.
 *
 * Records are kept whole as JSON text; the columns beside them are the ones
 * the store filters, orders or compares on.
 */
import type { DatabaseSync } from 'node:sqlite'

/** The schema this release writes. Bump it, and add a step to `MIGRATIONS`, when the schema changes. */
export const SCHEMA_VERSION = 1

// Each entry moves a database from version `index` to `index + 1`.
const MIGRATIONS: readonly string[] = [
  `
  -- seq is the rowid: creation order, which listRuns walks newest first.
  -- finished_seq orders runs by when they finished (eviction order) and is
  -- NULL while a run is live, so live runs are never evicted.
  CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    task_name TEXT NOT NULL,
    status TEXT NOT NULL,
    idempotency_key TEXT,
    finished_seq INTEGER,
    record TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task_name, seq);
  CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, seq);
  CREATE INDEX IF NOT EXISTS runs_by_finish ON runs (finished_seq) WHERE finished_seq IS NOT NULL;
  -- Keys are scoped to their task and held as long as their run is retained.
  CREATE UNIQUE INDEX IF NOT EXISTS runs_by_key ON runs (task_name, idempotency_key) WHERE idempotency_key IS NOT NULL;

  CREATE TABLE IF NOT EXISTS timers (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    record TEXT NOT NULL
  );

  CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS tokens_by_run ON tokens (run_id);
  `,
]

/**
 * Opens `path` and prepares the connection: waits up to `busyTimeoutMs` for
 * another connection's write lock instead of failing at once, switches a
 * file to write-ahead logging (readers never block the writer), and creates
 * or migrates the schema.
 */
export function openDatabase(path: string, busyTimeoutMs: number, where: string): DatabaseSync {
  // Loaded here rather than imported at the top, so importing `svc/node`
  // never loads `node:sqlite` (nor prints its ExperimentalWarning, on the
  // Node versions that do) unless a store is actually created.
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite')
  let db: DatabaseSync
  try {
    db = new DatabaseSync(path)
  } catch (error) {
    throw new Error(`${where}: cannot open ${path}: ${(error as Error).message}`, { cause: error })
  }
  try {
    prepare(db, path, busyTimeoutMs, where)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

function prepare(db: DatabaseSync, path: string, busyTimeoutMs: number, where: string): void {
  // busy_timeout first: the next pragmas may already need a lock another process holds.
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`)
  // An in-memory database answers 'memory'; WAL only applies to files.
  if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL')
  // Said outright rather than left to the build's default: a commit is on
  // disk (the WAL fsynced) before the writes it holds resolve, so a write a
  // caller saw resolve survives a power cut, not only a crash of the process.
  db.exec('PRAGMA synchronous = FULL')
  db.exec('BEGIN IMMEDIATE')
  try {
    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    if (version > SCHEMA_VERSION) {
      throw new Error(
        `${where}: ${path} holds schema version ${version}, newer than the ${SCHEMA_VERSION} this version of svc reads; upgrade svc or use another file`,
      )
    }
    for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v])
    if (version !== SCHEMA_VERSION) db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
    db.exec('COMMIT')
  } catch (error) {
    db.exec('ROLLBACK')
    throw error
  }
}
