/**
 * A SQLite-backed Durable Object's storage as `DurableObjectRunStore`
 * (sql-store.ts) uses it, the store's options, and the schema the object
 * brings up to date each time it wakes. Edge-safe: no `node:` import.
 */
import { migrateSchema, type SchemaDriver } from '../runtime/tasks/sql/migrations.ts'
import type { SqlRunner } from '../runtime/tasks/sql/procedure.ts'
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

/** `storage.sql` as the shared SQL procedures run on it. */
export function sqlRunner(sql: SqlStorageLike): SqlRunner {
  return {
    all: (query, params) => sql.exec(query, ...params).toArray(),
    run: (query, params) => void sql.exec(query, ...params),
  }
}

/**
 * Brings the object's tables to the schema this release writes, as every
 * wake does: the SQLite dialect's migration chain (sql/migrations.ts),
 * which on an object already up to date reads its version and runs
 * nothing else. Storage an earlier release made, which recorded no
 * version, is taken at the version its tables match.
 */
export function prepareTables(storage: SqlDurableStorageLike): void {
  migrateSchema(objectDriver(storage), 'durable-object', "the Durable Object's storage")
}

/** The storage as the migration chain runs on it, in the object's own transactions. */
function objectDriver(storage: SqlDurableStorageLike): SchemaDriver {
  return {
    query: (sql, ...params) => storage.sql.exec(sql, ...params).toArray(),
    transaction: (fn) => storage.transactionSync(fn),
  }
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
