/**
 * The one migration chain of the SQLite dialect, which both of its stores
 * run when they open a database: `SqliteRunStore` on a `node:sqlite` file
 * and `DurableObjectRunStore` on a Durable Object's `ctx.storage.sql`.
 * Each step brings a database to its version on the hosts it names; on
 * the others the version passes with nothing run (the file has tables of
 * the processes sharing it, the Durable Object keeps each timer's due time
 * as a number). `migrateSchema` applies the steps a database lacks in one
 * transaction and records the version the way its host allows.
 *
 * What a released step runs must keep its meaning: databases it migrated
 * exist. A schema change is a new step at the end. Edge-safe: no `node:`
 * import.
 */
import { EVENTS_BY_NAME_SEQ, EVENTS_TABLE } from './events.ts'
import { CHANGES_TABLE, LEASE_COLUMNS, OWNER_FENCE_COLUMN, OWNERS_TABLE, PROCESSES_TABLE } from './file-tables.ts'
import { prefixTables } from './namespace.ts'
import { read, runProcedure, type SqlProcedure, type SqlRows, type SqlValue, write } from './procedure.ts'
import { RUNS_BY_EVENT_WAIT, RUNS_BY_TASK_FINISH } from './queries.ts'
import { createTables, MOVE_STEPS, STEPS_TABLE, type TablesOptions, TIMERS_BY_RUN } from './schema.ts'
import { SCHEDULES_TABLE } from './schedules.ts'
import { SIGNALS_TABLE } from './signals.ts'
import { UPDATES_TABLE } from './updates.ts'
import { SEARCH_TABLES, TAG_ROWS_BY_STORE } from './search.ts'

/** The databases the dialect's stores keep: a `node:sqlite` file, a Durable Object's storage. */
export type SqliteHost = 'file' | 'durable-object'

/** One step of the chain. */
export interface Migration {
  /** The schema version a database has once the step ran. */
  readonly version: number
  /** The hosts whose databases the step changes. */
  readonly hosts: readonly SqliteHost[]
  /** What it runs: the statements, or the statements for the host's tables. */
  readonly sql: string | ((tables: TablesOptions) => string)
  /** The tables it makes, by the names releases before version 12 gave them (without `svc_`). */
  readonly plain?: readonly string[]
  /**
   * A table or index it makes, by its name now: on a Durable Object whose
   * storage has no version recorded, its presence says the step ran.
   */
  readonly marks?: string
}

const BOTH: readonly SqliteHost[] = ['file', 'durable-object']
const FILE: readonly SqliteHost[] = ['file']

/** The step whose version renamed svc's tables to `svc_…`: the steps before it are written with the names of today. */
const PREFIXED = 12

/** The chain, in order; a step's `version` is its place in it. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, hosts: BOTH, sql: createTables, plain: ['runs', 'timers', 'tokens'], marks: 'svc_runs' },
  // Steps move out of their run's record into a table of their own.
  { version: 2, hosts: BOTH, sql: STEPS_TABLE + MOVE_STEPS, plain: ['steps'], marks: 'svc_steps' },
  // The process that holds each running run, and the processes on the file (src/sqlite/owners.ts).
  { version: 3, hosts: FILE, sql: OWNERS_TABLE, plain: ['owners'] },
  // The fence of each running run's owner, which its attempt's writes check (src/sqlite/fences.ts).
  { version: 4, hosts: FILE, sql: OWNER_FENCE_COLUMN },
  // Leases, timer claims, cron ticks and wake-ups, for processes that share the work (src/sqlite/leases.ts).
  { version: 5, hosts: FILE, sql: LEASE_COLUMNS, plain: ['cron_ticks', 'wakes'] },
  // Events, held for their retention (events.ts).
  { version: 6, hosts: BOTH, sql: EVENTS_TABLE, plain: ['events'], marks: 'svc_events' },
  // The events of one name, newest first, for listEvents (events.ts).
  { version: 7, hosts: BOTH, sql: EVENTS_BY_NAME_SEQ, marks: 'svc_events_by_name_seq' },
  // Run changes, for the processes that share the file to hear of each other's (src/sqlite/changes.ts).
  { version: 8, hosts: FILE, sql: CHANGES_TABLE, plain: ['changes', 'change_listeners'] },
  // The suspended runs that wait for an event, by its name (queries.ts).
  { version: 9, hosts: BOTH, sql: RUNS_BY_EVENT_WAIT, marks: 'svc_runs_by_event_wait' },
  // The processes that share the file, and the versions of the tasks each serves (src/sqlite/leases.ts).
  { version: 10, hosts: FILE, sql: PROCESSES_TABLE, plain: ['processes'] },
  // Each task's finished runs in the order they finished, for retention (queries.ts).
  { version: 11, hosts: BOTH, sql: RUNS_BY_TASK_FINISH, marks: 'svc_runs_by_task_finish' },
  // svc's tables and indexes take the `svc_` prefix (namespace.ts): done by
  // `migrateSchema` before any step runs, since the steps above name them so.
  { version: PREFIXED, hosts: BOTH, sql: '' },
  // A run's timers, which a cancel deletes (schema.ts).
  { version: 13, hosts: BOTH, sql: TIMERS_BY_RUN, marks: 'svc_timers_by_run' },
  // Runtime schedules (schedules.ts).
  { version: 14, hosts: BOTH, sql: SCHEDULES_TABLE, marks: 'svc_schedules' },
  // Run search: tags, metadata and creation time (search.ts).
  { version: 15, hosts: BOTH, sql: SEARCH_TABLES, marks: 'svc_run_tags' },
  // A run's tag rows written by the store that inserts it, not by a trigger (search.ts).
  { version: 16, hosts: BOTH, sql: TAG_ROWS_BY_STORE, marks: 'svc_runs_tags_delete' },
  // Signals sent to runs (signals.ts).
  { version: 17, hosts: BOTH, sql: SIGNALS_TABLE, marks: 'svc_signals' },
  // Updates sent to runs, and their answers (updates.ts).
  { version: 18, hosts: BOTH, sql: UPDATES_TABLE, marks: 'svc_updates' },
]

/** The schema this release writes. */
export const SCHEMA_VERSION = MIGRATIONS.length

/** What `migrateSchema` needs of a database: a synchronous driver. */
export interface SchemaDriver {
  /** Runs one statement and returns its rows (none for a statement that writes). */
  query(sql: string, ...params: SqlValue[]): SqlRows
  /** Runs `fn` in one transaction: its writes commit together, or none do when it throws. */
  transaction(fn: () => void): void
}

/** How each host differs: its tables, where it records its version, what to do with a newer one. */
interface HostSchema {
  readonly tables: TablesOptions
  /** The version recorded, or `undefined` when the database has none recorded. */
  readVersion(): SqlProcedure<number | undefined>
  writeVersion(version: number): SqlProcedure<void>
  /** The advice when the database is newer than this release. */
  readonly newer: string
}

const HOSTS: Record<SqliteHost, HostSchema> = {
  // Files have carried `PRAGMA user_version` since their first release; a new file reads 0.
  file: {
    tables: { timerDueAt: false },
    *readVersion() {
      const [row] = yield read('PRAGMA user_version')
      return Number(row.user_version)
    },
    *writeVersion(version) {
      yield write(`PRAGMA user_version = ${version}`)
    },
    newer: 'upgrade svc or use another file',
  },
  // A Durable Object's SQL refuses `PRAGMA user_version` (SQLITE_AUTH), so
  // the version is a row of a table of its own. Releases before this table
  // recorded nothing: their storage has no such table.
  'durable-object': {
    tables: { timerDueAt: true },
    *readVersion() {
      if (!(yield* hasObject('svc_schema'))) return undefined
      const [row] = yield read('SELECT version FROM svc_schema')
      return Number(row?.version ?? 0)
    },
    *writeVersion(version) {
      yield write('CREATE TABLE IF NOT EXISTS svc_schema (id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL)')
      yield write('INSERT INTO svc_schema (id, version) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version', version)
    },
    newer: 'deploy a release of svc that reads it',
  },
}

/**
 * Brings the database to `SCHEMA_VERSION` (or to `version`, an older one,
 * as a database an earlier release left) in one transaction
 * (`migrationSteps`, run on the driver's connection).
 */
export function migrateSchema(db: SchemaDriver, host: SqliteHost, where: string, version = SCHEMA_VERSION): void {
  db.transaction(() =>
    runProcedure(migrationSteps(host, where, version), {
      all: (query, params) => db.query(query, ...params),
      run: (query, params) => void db.query(query, ...params),
    }),
  )
}

/**
 * The chain as a procedure (`procedure.ts`), which a store runs in one
 * transaction: with `runProcedure` on a synchronous driver, or with
 * `runProcedureAsync` on one that awaits each statement. Renames the tables
 * of a database older than version 12, runs the steps of the host it lacks,
 * then records the version. A database newer than this release is refused,
 * naming `where` (its tables may mean what this code does not know).
 * Durable Object storage with no version recorded, made by a release
 * before versions were, is taken to be at the version its tables match
 * (`recognise`).
 */
export function* migrationSteps(host: SqliteHost, where: string, version = SCHEMA_VERSION): SqlProcedure<void> {
  const schema = HOSTS[host]
  const recorded = yield* schema.readVersion()
  if (recorded !== undefined && recorded > SCHEMA_VERSION) {
    throw new Error(
      `${where} holds schema version ${recorded}, newer than the ${SCHEMA_VERSION} this version of svc reads; ${schema.newer}`,
    )
  }
  // An object's unrecorded storage may hold the tables of any release, plain or prefixed.
  const renameAt = recorded ?? PREFIXED - 1
  if (renameAt > 0 && renameAt < PREFIXED) yield* prefixTables(plainTables(host, renameAt))
  const from = recorded ?? (yield* recognise(host))
  for (const step of MIGRATIONS) {
    if (step.version <= from || step.version > version || !step.hosts.includes(host)) continue
    const sql = typeof step.sql === 'string' ? step.sql : step.sql(schema.tables)
    for (const statement of statementsOf(sql)) yield write(statement)
  }
  if (recorded !== version) yield* schema.writeVersion(version)
}

/**
 * The statements of a step's text, one by one, as a driver that prepares a
 * statement at a time takes them. Each ends at a `;` that ends its line:
 * the `;` inside a trigger's body (search.ts) is followed by more text.
 */
function statementsOf(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '')
}

/** svc's tables on `host` at `version`, by the names they had before version 12. */
export function plainTables(host: SqliteHost, version: number): string[] {
  return MIGRATIONS.filter((step) => step.version <= version && step.hosts.includes(host)).flatMap((step) => step.plain ?? [])
}

/**
 * The version of storage made before versions were recorded: the one
 * before its first step whose table or index is missing. Those releases
 * made their whole schema with `CREATE … IF NOT EXISTS` on every wake, so
 * what one release made is there entire; the steps after the version found
 * may meet tables a later release made anyway (an object holding events
 * but no steps table), which their `IF NOT EXISTS` passes over.
 */
function* recognise(host: SqliteHost): SqlProcedure<number> {
  const rows = yield read('SELECT name FROM sqlite_master')
  const held = new Set(rows.map((row) => String(row.name)))
  const missing = MIGRATIONS.find((step) => step.hosts.includes(host) && step.marks !== undefined && !held.has(step.marks))
  return missing === undefined ? SCHEMA_VERSION : missing.version - 1
}

function* hasObject(name: string): SqlProcedure<boolean> {
  return (yield read('SELECT 1 FROM sqlite_master WHERE name = ?', name)).length > 0
}
