/**
 * What the parts of `PostgresRunStore` share: the client, the schema made
 * ready before the first query, whether the database can be reached, the
 * fences of the leases this process holds, and `run`, the one way every
 * query goes out, with its retries and its errors that say what to do.
 * The parts of the store (run-creates.ts, run-reads.ts, run-patches.ts,
 * step-writes.ts, timer-calls.ts, token-calls.ts) each take this object.
 */
import type { Sql } from 'postgres'
import { redactUrl } from '../runtime/redact.ts'
import type { Logger } from '../runtime/types.ts'
import { Availability } from './availability.ts'
import { createClient, typesKnown } from './client.ts'
import { EvictionFloor } from './eviction-floor.ts'
import { Fences } from './fences.ts'
import { migrate } from './migrations.ts'
import { connectionFailed, isTransient, unreachable } from './transient.ts'

/** How the store names itself in its errors. */
export const WHERE = 'PostgresRunStore'

// SQLSTATE code (Postgres manual, appendix A) that jsonb raises for \u0000 in a string.
const UNTRANSLATABLE_CHARACTER = '22P05'

/**
 * The waits before each new try of a call that met a passing fault of the
 * database (transient.ts), in milliseconds, each drawn between half and
 * all of it: about 1.6 s in all, after which the call fails with
 * `StoreUnavailableError`. A call stops sooner once the database cannot be
 * reached at all (availability.ts).
 */
const RETRY_DELAYS_MS = [25, 50, 100, 200, 400, 800]

/** A query as `PostgresConnection.run` sends it: told whether an earlier try of the call may have committed. */
export type Query<T> = (sql: Sql, maybeWritten: boolean) => Promise<T>

export interface PostgresConnectionOptions {
  url: string
  schema: string
  maxRuns: number
  leaseMs: number
  connectTimeoutMs: number
  logger: Pick<Logger, 'warn' | 'info'>
}

export class PostgresConnection {
  readonly schema: string
  readonly maxRuns: number
  readonly leaseMs: number
  /** The fences of the leases this process holds, which its attempts' writes check. */
  readonly fences = new Fences()
  /** Where the next insert's eviction of finished runs starts. */
  readonly evictions = new EvictionFloor()
  readonly #url: string
  #sql: Sql | undefined
  readonly #ready: Promise<void>
  /** Whether the database can be reached: while it cannot, calls fail at once (availability.ts). */
  readonly #availability: Availability

  constructor(options: PostgresConnectionOptions) {
    const { url, schema, connectTimeoutMs, logger } = options
    this.schema = schema
    this.maxRuns = options.maxRuns
    this.leaseMs = options.leaseMs
    this.#url = url
    const sql = createClient(url, connectTimeoutMs)
    this.#sql = sql
    this.#availability = new Availability({ where: `${WHERE} (${redactUrl(url)})`, probe: () => sql`SELECT 1`, logger })
    this.#ready = migrate(sql, schema, WHERE).then(
      () => typesKnown(sql),
      (error: unknown) => {
        throw (error as Error).message?.startsWith(WHERE)
          ? error
          : new Error(`${WHERE}: cannot use ${redactUrl(url)}: ${(error as Error).message}`, { cause: error })
      },
    )
    // Reported by ready() and by every call; not an unhandled rejection meanwhile.
    this.#ready.catch(() => {})
  }

  /** Resolves once the tables exist at this release's version; rejects with the reason they cannot. */
  ready(): Promise<void> {
    return this.#ready
  }

  /** Whether `close()` has not been called yet. */
  get open(): boolean {
    return this.#sql !== undefined
  }

  /**
   * Closes the connections, letting running queries finish; later queries
   * reject. `first` runs before, while queries still go out. Idempotent.
   */
  async close(first: () => Promise<void>): Promise<void> {
    const sql = this.#sql
    if (!sql) return
    await first()
    this.#sql = undefined
    this.#availability.close()
    await sql.end({ timeout: 5 })
  }

  /**
   * Runs `query` once the schema is ready, with errors that say what to do.
   * A query that meets a passing fault of the database (transient.ts: a
   * dropped connection, a server restarting, too many clients, a deadlock's
   * victim) goes again after a short wait, up to `RETRY_DELAYS_MS`; then,
   * or at once while the database cannot be reached (availability.ts), the
   * call fails with `StoreUnavailableError`, 503 `STORE_UNAVAILABLE`.
   *
   * Every query sent this way is safe to send again: it reads, it upserts,
   * it claims what lapses if its answer is lost, or its caller tells its
   * own earlier write apart (run-patches.ts, run-creates.ts, `settleToken`).
   * `once` sends it once (the app's own work is in it, or a transaction
   * that cannot tell): a passing fault fails the call as unavailable.
   * `query` is told whether an earlier try of the call may have committed
   * (its connection dropped while it was out: `connectionFailed`).
   */
  async run<T>(query: Query<T>, once = false): Promise<T> {
    await this.#ready
    let maybeWritten = false
    for (let attempt = 0; ; attempt++) {
      const sql = this.#sql
      if (!sql) throw new Error(`${WHERE}: the store for ${redactUrl(this.#url)} is closed`)
      this.#availability.check()
      try {
        return await query(sql, maybeWritten)
      } catch (error) {
        if ((error as { code?: string }).code === UNTRANSLATABLE_CHARACTER) {
          throw new Error(
            `${WHERE}: cannot store a string holding the NUL character (\\u0000): Postgres jsonb has no room for it; ` +
              "strip it from the run's input, result, step outputs and token payloads",
            { cause: error },
          )
        }
        if (!isTransient(error)) throw error
        if (unreachable(error)) this.#availability.lost(error)
        maybeWritten ||= connectionFailed(error) && !unreachable(error)
        if (once || attempt >= RETRY_DELAYS_MS.length || !this.#availability.reachable) {
          throw this.#availability.refusal(error, maybeWritten)
        }
        const wait = RETRY_DELAYS_MS[attempt]
        await new Promise((resolve) => setTimeout(resolve, wait / 2 + (Math.random() * wait) / 2))
      }
    }
  }
}
