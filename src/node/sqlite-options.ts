/** Options of `SqliteRunStore`, their defaults and their checks. */
import { DEFAULT_MAX_RUNS } from '../runtime/tasks/store-limits.ts'
import { describe } from '../runtime/describe.ts'

export interface SqliteRunStoreOptions {
  /**
   * The database file, created if missing (its directory must exist);
   * relative paths resolve against the working directory. `':memory:'`
   * keeps everything in memory, which survives nothing but is handy in
   * tests. Several processes may open the same file. SQLite keeps its
   * write-ahead log beside it (`<path>-wal`, `<path>-shm`).
   */
  path: string
  /**
   * How many runs to retain. Past it, the runs that finished (completed,
   * failed or cancelled) longest ago are evicted first, with their tokens and
   * idempotency keys. Scheduled, running and suspended runs are never
   * evicted: once `maxRuns` of them are live (counting every process on
   * the file), `createRun` rejects with `StoreFullError` (503 `STORE_FULL`)
   * until some finish. The same rule as `MemoryRunStore`.
   * @default 10000
   */
  maxRuns?: number
  /**
   * How long a write waits for another connection's lock (another process
   * on the same file) before it fails with `StoreUnavailableError` (503
   * `STORE_UNAVAILABLE`, SQLITE_BUSY).
   * Note: `node:sqlite` is synchronous, so the wait blocks this process's
   * event loop; keep it short.
   * @default 5000
   */
  busyTimeoutMs?: number
}

/** Default of `busyTimeoutMs`. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** Checks `options` and fills in the defaults. */
export function resolveSqliteOptions(options: SqliteRunStoreOptions, where: string): Required<SqliteRunStoreOptions> {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object with a path (got ${describe(options)})`)
  }
  const { path, maxRuns = DEFAULT_MAX_RUNS, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS } = options
  if (typeof path !== 'string' || path === '') {
    throw new TypeError(`${where}: path must be a database file path or ':memory:' (got ${describe(path)})`)
  }
  checkWholeNumber(where, 'maxRuns', maxRuns, 1)
  checkWholeNumber(where, 'busyTimeoutMs', busyTimeoutMs, 0)
  return { path, maxRuns, busyTimeoutMs }
}

function checkWholeNumber(where: string, name: string, value: unknown, min: number): void {
  const message = `${where}: ${name} must be a whole number, ${min} or more (got ${describe(value)})`
  if (typeof value !== 'number') throw new TypeError(message)
  if (!Number.isInteger(value) || value < min) throw new RangeError(message)
}
