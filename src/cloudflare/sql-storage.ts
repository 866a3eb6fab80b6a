/**
 * A SQLite-backed Durable Object's storage as `DurableObjectRunStore`
 * (sql-store.ts) uses it, the store's options, and the tables it makes
 * there each time the object wakes. Edge-safe: no `node:` import.
 */
import { EVENTS_BY_NAME_SEQ, EVENTS_TABLE } from '../runtime/tasks/sql/events.ts'
import { prefixTables } from '../runtime/tasks/sql/namespace.ts'
import { runProcedure, type SqlRunner } from '../runtime/tasks/sql/procedure.ts'
import { RUNS_BY_EVENT_WAIT, RUNS_BY_TASK_FINISH } from '../runtime/tasks/sql/queries.ts'
import { createTables, MOVE_STEPS, STEPS_TABLE } from '../runtime/tasks/sql/schema.ts'
import type { SqlConnection } from '../runtime/tasks/sql/transaction.ts'
import type { RunRecord } from '../types.ts'

/** How many rows the last statement inserted, updated or deleted. */
const CHANGES = 'SELECT changes() AS n'

/** The parts of a Durable Object's `SqlStorage` the store uses. */
export interface SqlStorageLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] }
}

/** The parts of a Durable Object's `DurableObjectStorage` the store uses. */
export interface SqlDurableStorageLike {
  readonly sql: SqlStorageLike
  transactionSync<T>(fn: () => T): T
}

export interface DurableObjectRunStoreOptions {
  /**
   * How many runs to retain; the runs that finished longest ago are evicted
   * first, live runs never (see `MemoryRunStore`).
   * @default 10000
   */
  maxRuns?: number
  /**
   * Called after every write that may move the earliest pending timer or
   * start or end an attempt (timers saved or taken, runs created or
   * updated), with the run when one changed.
   */
  onChange?: (run?: RunRecord) => void
}

/** The tables an object of a release before the `svc_` prefix held, by their names then. */
const PLAIN_TABLES = ['runs', 'timers', 'tokens', 'steps', 'events']

// The tables of `SqliteRunStore`, plus each timer's due time, which the alarm is set from.
const SCHEMA = createTables({ timerDueAt: true }) + EVENTS_TABLE + EVENTS_BY_NAME_SEQ + RUNS_BY_EVENT_WAIT + RUNS_BY_TASK_FINISH

/** `storage.sql` as the shared SQL procedures run on it. */
export function sqlRunner(sql: SqlStorageLike): SqlRunner {
  return {
    all: (query, params) => sql.exec(query, ...params).toArray(),
    run: (query, params) => void sql.exec(query, ...params),
  }
}

/**
 * Makes the store's tables, as every wake does (`CREATE … IF NOT EXISTS`),
 * after renaming those an earlier release named without the prefix
 * (sql/namespace.ts); an object that held runs before steps had a table of
 * their own moves them there, once.
 */
export function prepareTables(storage: SqlDurableStorageLike): void {
  const runner = sqlRunner(storage.sql)
  storage.transactionSync(() => runProcedure(prefixTables(PLAIN_TABLES), runner))
  const hadSteps = runner.all(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'svc_steps'`, []).length > 0
  storage.sql.exec(SCHEMA)
  if (!hadSteps) storage.transactionSync(() => storage.sql.exec(STEPS_TABLE + MOVE_STEPS))
}

/** The object's SQL as a transactional step's `tx` runs the app's statements on it. */
export function appConnection(sql: SqlStorageLike): SqlConnection {
  return {
    query: (text, params) => sql.exec(text, ...params).toArray(),
    run: (text, params) => {
      sql.exec(text, ...params).toArray()
      return Number(sql.exec(CHANGES).toArray()[0].n)
    },
  }
}
