/** Options of `SqliteRunStore`, their defaults and their checks. */
import { checkWholeNumber, DEFAULT_LEASE_MS, DEFAULT_MAX_RUNS, DEFAULT_POLL_MS } from '../runtime/tasks/store/store-limits.ts'
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
  /**
   * Share the work with the other processes that open the file with
   * `shared: true`, as processes on one Postgres database do: due timers,
   * the attempts of a process that died and cron ticks are claimed by
   * whichever live process comes first, and each running attempt holds a
   * lease its process renews (docs/stores.md "Several processes on one
   * SQLite file"). Without it, a process fires only the timers it armed,
   * and the attempts of a process that died are taken over at the next
   * start of a process.
   * Note: every process on the file must open it the same way.
   * @default false
   */
  shared?: boolean
  /**
   * With `shared`: how long a process's claim on a running attempt (or a
   * due timer) lasts before another process may take it over. A process
   * renews its leases every third of it, so a live one never loses them.
   * @default 30000
   */
  leaseMs?: number
  /**
   * With `shared`: how often an idle process looks for due work (timers,
   * lapsed leases) when no other process woke it.
   * @default 1000
   */
  pollMs?: number
  /**
   * How long a transactional step's async function may keep its
   * transaction open (`ctx.step.transaction(key, async (tx) => …)`). While
   * it is open, the store's other writes wait for it, and so do other
   * processes on the file; past it, the step fails with an error saying
   * so, its writes rolled back, and retries apply.
   * @default 1000
   */
  transactionTimeoutMs?: number
}

/** Default of `busyTimeoutMs`. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** Default of `transactionTimeoutMs`. */
export const DEFAULT_TRANSACTION_TIMEOUT_MS = 1000

/** Checks `options` and fills in the defaults. */
export function resolveSqliteOptions(options: SqliteRunStoreOptions, where: string): Required<SqliteRunStoreOptions> {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object with a path (got ${describe(options)})`)
  }
  const {
    path,
    maxRuns = DEFAULT_MAX_RUNS,
    busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS,
    shared = false,
    leaseMs = DEFAULT_LEASE_MS,
    pollMs = DEFAULT_POLL_MS,
    transactionTimeoutMs = DEFAULT_TRANSACTION_TIMEOUT_MS,
  } = options
  if (typeof path !== 'string' || path === '') {
    throw new TypeError(`${where}: path must be a database file path or ':memory:' (got ${describe(path)})`)
  }
  checkWholeNumber(where, 'maxRuns', maxRuns, 1)
  checkWholeNumber(where, 'busyTimeoutMs', busyTimeoutMs, 0)
  if (typeof shared !== 'boolean') throw new TypeError(`${where}: shared must be true or false (got ${describe(shared)})`)
  checkWholeNumber(where, 'leaseMs', leaseMs, 1)
  checkWholeNumber(where, 'pollMs', pollMs, 1)
  checkWholeNumber(where, 'transactionTimeoutMs', transactionTimeoutMs, 1)
  return { path, maxRuns, busyTimeoutMs, shared, leaseMs, pollMs, transactionTimeoutMs }
}
