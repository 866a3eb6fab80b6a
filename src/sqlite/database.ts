/**
 * Opening a `SqliteRunStore` database: the connection, its pragmas and the
 * schema, versioned with `PRAGMA user_version` so a later release can
 * migrate a file an earlier one wrote.
 *
 * The tables themselves are shared with `DurableObjectRunStore`
 * (`src/runtime/tasks/sql/schema.ts`, `sql/events.ts`).
 */
import type { DatabaseSync } from 'node:sqlite'
import { prefixTables } from '../runtime/tasks/sql/namespace.ts'
import { runProcedure } from '../runtime/tasks/sql/procedure.ts'
import { EVENTS_BY_NAME_SEQ, EVENTS_TABLE } from '../runtime/tasks/sql/events.ts'
import { RUNS_BY_EVENT_WAIT, RUNS_BY_TASK_FINISH } from '../runtime/tasks/sql/queries.ts'
import { createTables, MOVE_STEPS, STEPS_TABLE } from '../runtime/tasks/sql/schema.ts'
import { CHANGES_TABLE } from './changes.ts'
import { commitOpenBatch } from './group-commit.ts'
import { LEASE_COLUMNS, PROCESSES_TABLE } from './leases.ts'
import { OWNER_FENCE_COLUMN, OWNERS_TABLE } from './owners.ts'

/** Pages of WAL that trigger a checkpoint (see `prepare`). */
const WAL_CHECKPOINT_PAGES = 10_000

/** The schema this release writes. Bump it, and add a step to `MIGRATIONS`, when the schema changes. */
export const SCHEMA_VERSION = 12

// Each entry moves a database from version `index` to `index + 1`. What an
// entry runs must keep its meaning once released: files it migrated exist.
// The entries name the tables as they are named since version 12 (`svc_…`,
// sql/namespace.ts): a file of an earlier version has its tables renamed
// first (`PLAIN_TABLES`), then the entries it lacks run.
const MIGRATIONS: readonly string[] = [
  createTables({ timerDueAt: false }),
  // 2: steps move out of their run's record into a table of their own.
  STEPS_TABLE + MOVE_STEPS,
  // 3: the process that holds each running run, and the processes on the file (owners.ts).
  OWNERS_TABLE,
  // 4: the fence of each running run's owner, which its attempt's writes check (fences.ts).
  OWNER_FENCE_COLUMN,
  // 5: leases, timer claims, cron ticks and wake-ups, for processes that share the work (leases.ts).
  LEASE_COLUMNS,
  // 6: events, held for their retention (sql/events.ts).
  EVENTS_TABLE,
  // 7: the events of one name, newest first, for listEvents (sql/events.ts).
  EVENTS_BY_NAME_SEQ,
  // 8: run changes, for the processes that share the file to hear of each other's (changes.ts).
  CHANGES_TABLE,
  // 9: the suspended runs that wait for an event, by its name (sql/queries.ts).
  RUNS_BY_EVENT_WAIT,
  // 10: the processes that share the file, and the versions of the tasks each serves (leases.ts).
  PROCESSES_TABLE,
  // 11: each task's finished runs in the order they finished, for retention (sql/queries.ts).
  RUNS_BY_TASK_FINISH,
  // 12: svc's tables and indexes take the `svc_` prefix, by `prefixTables` before the entries run.
  '',
]

/**
 * svc's tables as releases before version 12 named them, without the
 * prefix, each with the version that created it: a file of version `v`
 * has those of `v` and before. A table of another name, or one the app
 * made before svc had a table of that name, stays the app's.
 */
const PLAIN_TABLES: readonly (readonly [name: string, since: number])[] = [
  ['runs', 1],
  ['timers', 1],
  ['tokens', 1],
  ['steps', 2],
  ['owners', 3],
  ['cron_ticks', 5],
  ['wakes', 5],
  ['events', 6],
  ['changes', 8],
  ['change_listeners', 8],
  ['processes', 10],
]

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
  db.exec('BEGIN IMMEDIATE')
  try {
    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    if (version > SCHEMA_VERSION) {
      throw new Error(
        `${where}: ${path} holds schema version ${version}, newer than the ${SCHEMA_VERSION} this version of svc reads; upgrade svc or use another file`,
      )
    }
    if (version > 0 && version < 12) {
      const plain = PLAIN_TABLES.filter(([, since]) => since <= version).map(([name]) => name)
      runProcedure(prefixTables(plain), {
        all: (query, params) => db.prepare(query).all(...params) as Record<string, unknown>[],
        run: (query, params) => void db.prepare(query).run(...params),
      })
    }
    for (let v = version; v < SCHEMA_VERSION; v++) if (MIGRATIONS[v]) db.exec(MIGRATIONS[v])
    if (version !== SCHEMA_VERSION) db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
    db.exec('COMMIT')
  } catch (error) {
    db.exec('ROLLBACK')
    throw error
  }
}
