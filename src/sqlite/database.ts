/**
 * Opening a `SqliteRunStore` database: the connection, its pragmas and the
 * schema, which the SQLite dialect's migration chain creates or brings up
 * to date (src/runtime/tasks/sql/migrations.ts), its version kept in
 * `PRAGMA user_version` so a later release can migrate a file an earlier
 * one wrote.
 */
import type { DatabaseSync } from 'node:sqlite'
import { migrateSchema, type SchemaDriver } from '../runtime/tasks/sql/migrations.ts'
import { commitOpenBatch } from './group-commit.ts'

export { SCHEMA_VERSION } from '../runtime/tasks/sql/migrations.ts'

/** Pages of WAL that trigger a checkpoint (see `prepare`). */
const WAL_CHECKPOINT_PAGES = 10_000

/**
 * Opens `path` and prepares the connection: waits up to `busyTimeoutMs` for
 * another connection's write lock instead of failing at once, switches a
 * file to write-ahead logging (readers never block the writer), and creates
 * or migrates the schema.
 */
export function openDatabase(path: string, busyTimeoutMs: number, where: string): DatabaseSync {
  // Loaded here rather than imported at the top, so importing `svcjs/node`
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
  // A page cache of up to 32 MiB instead of SQLite's 2 MiB: a store at its
  // bound deletes and inserts through five indexes with every batch, and
  // with 100,000 runs (a file of about 20 MB) the default cache sent most of
  // those index pages back to the file, doubling the cost of a run. The
  // cache fills only with the pages read, so a small file costs little.
  db.exec('PRAGMA cache_size = -32768')
  // Checkpoint the WAL into the database file once it holds 10,000 pages
  // (about 40 MiB) instead of SQLite's 1,000. A checkpoint runs inside the
  // commit that crosses the mark, on this thread; with a batch of thousands
  // of runs past 1,000 pages, every commit paid for one, and the pages that
  // consecutive batches rewrite (the same index pages, a run's row at its
  // start and at its end) were copied into the file again each time. Ten
  // times the mark copies each such page once per ten times the writes: a
  // sustained stream of runs costs about a quarter less per run. The WAL
  // file grows to about 40 MiB before SQLite starts it over, and closing
  // the last connection checkpoints it and deletes it.
  db.exec(`PRAGMA wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`)
  commitOpenBatch(path)
  migrateSchema(fileDriver(db), 'file', `${where}: ${path}`)
}

/**
 * The connection as the migration chain runs on it. Its transaction takes
 * the write lock at once (IMMEDIATE): of processes opening one file at the
 * same moment, the first migrates it and the others find it migrated.
 */
export function fileDriver(db: DatabaseSync): SchemaDriver {
  return {
    query: (sql, ...params) => db.prepare(sql).all(...params) as Record<string, unknown>[],
    transaction(fn) {
      db.exec('BEGIN IMMEDIATE')
      try {
        fn()
        db.exec('COMMIT')
      } catch (error) {
        db.exec('ROLLBACK')
        throw error
      }
    },
  }
}
