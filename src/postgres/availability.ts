/**
 * Whether the database can be reached, as the store last found: a circuit
 * breaker. Once a connection cannot be made at all (transient.ts,
 * `unreachable`), calls fail at once with `StoreUnavailableError` rather
 * than each waiting on a connection that will not come: a trigger answers
 * 503 `STORE_UNAVAILABLE` with `Retry-After` in milliseconds, not after
 * the driver's timeouts, and nothing it asked for is written after that
 * answer. Meanwhile one probe (`SELECT 1`) goes every `PROBE_MS`; the
 * first that gets through closes the circuit, and the calls go again.
 */
import { StoreUnavailableError, errorMessage } from '../runtime/errors.ts'
import type { Logger } from '../runtime/types.ts'

/** How often a probe goes while the database cannot be reached. */
export const PROBE_MS = 250
/** `Retry-After` of a call refused while the circuit is open, in seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1

export interface AvailabilityOptions {
  /** What the store is called in messages, with the database's URL (its password redacted). */
  where: string
  /** One cheap statement; resolves once the database answered. */
  probe(): Promise<unknown>
  logger?: Pick<Logger, 'warn' | 'info'>
}

export class Availability {
  readonly #options: AvailabilityOptions
  /** Why the database cannot be reached, while it cannot. */
  #down: { error: unknown; since: number } | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  #closed = false

  constructor(options: AvailabilityOptions) {
    this.#options = options
  }

  /** Whether calls go to the database now. */
  get reachable(): boolean {
    return this.#down === undefined
  }

  /** Throws the refusal of a call while the database cannot be reached. */
  check(): void {
    if (this.#down !== undefined) throw this.refusal(this.#down.error)
  }

  /**
   * The error a call fails with when the database could not serve it:
   * `cause` is the driver's. `maybeWritten`: the connection dropped while
   * the call's statement was out, so it may have committed.
   */
  refusal(cause: unknown, maybeWritten = false): StoreUnavailableError {
    const down = this.#down
    const what =
      down === undefined ? 'the database failed the call' : `the database cannot be reached (for ${seconds(Date.now() - down.since)} s)`
    const written = maybeWritten
      ? 'The connection dropped while the call was out, so it may or may not have been written'
      : 'Nothing of this call was written'
    return new StoreUnavailableError(`${this.#options.where}: ${what}: ${errorMessage(cause)}. ${written}; retry in a moment`, {
      cause,
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
    })
  }

  /** A connection could not be made: calls stop until a probe gets through. */
  lost(error: unknown): void {
    if (this.#down !== undefined || this.#closed) return
    this.#down = { error, since: Date.now() }
    this.#options.logger?.warn(
      `[svc] ${this.#options.where}: the database cannot be reached (${errorMessage(error)}); calls answer STORE_UNAVAILABLE until it can`,
    )
    this.#schedule()
  }

  /** Stops probing; the store is closing. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
  }

  #schedule(): void {
    this.#timer = setTimeout(() => this.#probe(), PROBE_MS)
    // A probe never keeps a process alive on its own.
    this.#timer.unref?.()
  }

  #probe(): void {
    if (this.#closed) return
    this.#options.probe().then(
      () => {
        const down = this.#down
        this.#down = undefined
        if (down !== undefined) {
          this.#options.logger?.info(
            `[svc] ${this.#options.where}: the database can be reached again after ${seconds(Date.now() - down.since)} s`,
          )
        }
      },
      (error: unknown) => {
        if (this.#down !== undefined) this.#down.error = error
        if (!this.#closed) this.#schedule()
      },
    )
  }
}

/** `ms` in seconds, to a tenth. */
function seconds(ms: number): number {
  return Math.round(ms / 100) / 10
}
