/** Options of `PostgresRunStore`, their defaults and their checks. */
import { checkWholeNumber, DEFAULT_LEASE_MS, DEFAULT_MAX_RUNS, DEFAULT_POLL_MS } from '../runtime/tasks/store/store-limits.ts'
import { describe } from '../runtime/describe.ts'
import { redactUrl } from '../runtime/redact.ts'
import type { Logger } from '../runtime/types.ts'

export interface PostgresRunStoreOptions {
  /**
   * The database to connect to: `postgres://user:password@host:port/database`
   * (or `postgresql://`), with any of the driver's query parameters
   * (`?sslmode=require`, …). Every process that shares runs points at the
   * same database and `schema`.
   */
  url: string
  /**
   * The schema that holds the store's tables, created if missing. Stores
   * with different schemas in one database are separate. An unquoted
   * Postgres identifier: lowercase letters, digits and `_`, not starting
   * with a digit, at most 63 characters.
   * @default 'svc'
   */
  schema?: string
  /**
   * How many runs to retain. Past it, the runs that finished (completed or
   * failed) longest ago are evicted first, with their tokens and
   * idempotency keys. Scheduled, running and suspended runs are never
   * evicted: once `maxRuns` of them are live (counting every process on the
   * database), `createRun` rejects with `StoreFullError` (503 `STORE_FULL`)
   * until some finish. The same rule as `MemoryRunStore`.
   * @default 10000
   */
  maxRuns?: number
  /**
   * How long a process's claim on a running attempt lasts before another
   * process may take the attempt over. A process renews its leases every
   * third of it, so a live one never loses them; one that dies (`kill -9`)
   * leaves them to lapse. A due timer claimed by a process is likewise
   * freed again after this long if the process never acted on it.
   * @default 30000
   */
  leaseMs?: number
  /**
   * How often an idle process looks for due work (timers, lapsed leases)
   * when no notification woke it. Timers a process armed itself fire on
   * time; this bounds how late one is picked up after its process died.
   * @default 1000
   */
  pollMs?: number
  /**
   * How long a new connection may take before the attempt fails. While no
   * connection can be made (refused, timed out, a server starting up),
   * calls fail at once with `StoreUnavailableError` (503
   * `STORE_UNAVAILABLE`, `Retry-After: 1`) and a probe looks every 250 ms;
   * calls go again as soon as one gets through. Raise it for a database
   * that wakes slowly (a serverless Postgres that scales to zero).
   * @default 5000
   */
  connectTimeoutMs?: number
  /**
   * Where the store says that the database can no longer, or again, be
   * reached.
   * @default console
   */
  logger?: Pick<Logger, 'warn' | 'info'>
}

export type ResolvedPostgresOptions = Required<PostgresRunStoreOptions>

export const DEFAULT_CONNECT_TIMEOUT_MS = 5000

export const DEFAULT_SCHEMA = 'svc'

// Unquoted identifiers only, so the name can be spliced into DDL as is and
// means the same thing in psql (Postgres folds unquoted names to lowercase).
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/** Checks `options` and fills in the defaults. */
export function resolvePostgresOptions(options: PostgresRunStoreOptions, where: string): ResolvedPostgresOptions {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object with a url (got ${describe(options)})`)
  }
  const {
    url,
    schema = DEFAULT_SCHEMA,
    maxRuns = DEFAULT_MAX_RUNS,
    leaseMs = DEFAULT_LEASE_MS,
    pollMs = DEFAULT_POLL_MS,
    connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
    logger = console,
  } = options
  checkUrl(where, url)
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new TypeError(
      `${where}: schema must be a lowercase identifier (letters, digits, _; at most 63 characters) (got ${describe(schema)})`,
    )
  }
  checkWholeNumber(where, 'maxRuns', maxRuns, 1)
  checkWholeNumber(where, 'leaseMs', leaseMs, 1)
  checkWholeNumber(where, 'pollMs', pollMs, 1)
  checkWholeNumber(where, 'connectTimeoutMs', connectTimeoutMs, 1)
  return { url, schema, maxRuns, leaseMs, pollMs, connectTimeoutMs, logger }
}

function checkUrl(where: string, url: unknown): asserts url is string {
  const expected = `${where}: url must be a postgres:// or postgresql:// URL`
  if (typeof url !== 'string') throw new TypeError(`${expected} (got ${describe(url)})`)
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed?.protocol !== 'postgres:' && parsed?.protocol !== 'postgresql:') {
    throw new TypeError(`${expected} (got ${describe(redactUrl(url))})`)
  }
}
