/**
 * The writes that record how an attempt ended (its run's end, its retry,
 * its suspension and the wait that will wake it), each tried again until
 * it lands. The attempt's work is done by then: a write that fails is the
 * store's fault, not the task's, and it must not leave a run that nothing
 * will finish or wake (a run `suspended` with no timer to resume it).
 *
 * A write that fails is tried again for as long as it takes, whatever the
 * error: the store unreachable or full (`StoreUnavailableError`), or a
 * fault no one foresaw (a trigger an operator added, say), which is logged
 * once a minute meanwhile. Between tries the waits grow from
 * `FIRST_WAIT_MS` to `LAST_WAIT_MS`. Tries stop when the attempt is
 * stopped (the run was cancelled or taken over), when the write finds the
 * run another process's (`LeaseLostError`), and when the engine closes:
 * the run is then left as the store has it, under the lease of its
 * attempt, which lapses, and another process (or this one, after a
 * restart) takes it over (recovery.ts, shared-work.ts).
 *
 * Every write tried again this way must be one that a second landing
 * leaves as the first did: a store whose connection dropped as it
 * committed cannot tell whether it did (the Postgres store tells its own
 * earlier write apart: store.ts).
 */
import type { Logger } from '../../types.ts'
import { LeaseLostError, errorMessage } from '../../errors.ts'
import { setTimer } from '../base/in-process-timers.ts'

export const FIRST_WAIT_MS = 100
export const LAST_WAIT_MS = 5000
/** How often a write still failing is logged again. */
const LOG_EVERY_MS = 60_000

export interface OutcomeWritesOptions {
  logger: Logger
  unrefTimers: boolean
}

/** What a write is for, to log and to stop. */
export interface WriteOwner {
  readonly id: string
  readonly taskName: string
  /** The attempt was stopped (cancelled, taken over): its writes stop too. */
  readonly stopped: boolean
}

export class OutcomeWrites {
  readonly #logger: Logger
  readonly #unref: boolean
  #closed = false
  /** Waits between tries in progress, to cut short at `close()`. */
  readonly #waits = new Set<{ timer: ReturnType<typeof setTimeout>; resolve: () => void }>()

  constructor(options: OutcomeWritesOptions) {
    this.#logger = options.logger
    this.#unref = options.unrefTimers
  }

  /**
   * `write()`, tried again after a failure until it lands (see the file's
   * comment); rejects with the error that stood. Not async: the first try
   * of every write in flight holds no frame.
   */
  persist<T>(owner: WriteOwner, what: string, write: () => Promise<T>): Promise<T> {
    return write().catch((error: unknown) => this.#again(owner, what, write, error))
  }

  /** Tries nothing more: waits in progress end, and their writes reject with their last error. */
  close(): void {
    this.#closed = true
    for (const wait of this.#waits) {
      clearTimeout(wait.timer)
      wait.resolve()
    }
    this.#waits.clear()
  }

  async #again<T>(owner: WriteOwner, what: string, write: () => Promise<T>, first: unknown): Promise<T> {
    let error = first
    let wait = FIRST_WAIT_MS
    let logged = 0
    for (let tries = 1; ; tries++) {
      if (this.#closed || owner.stopped || error instanceof LeaseLostError) throw error
      if (Date.now() - logged >= LOG_EVERY_MS) {
        logged = Date.now()
        this.#logger.warn(
          `[svc] task "${owner.taskName}": run ${owner.id}: could not record ${what} (${errorMessage(error)}; ${tries} ${tries === 1 ? 'try' : 'tries'}); trying again until it is recorded`,
        )
      }
      await this.#sleep(wait)
      wait = Math.min(LAST_WAIT_MS, wait * 2)
      if (this.#closed || owner.stopped) throw error
      try {
        const written = await write()
        this.#logger.info(`[svc] task "${owner.taskName}": run ${owner.id}: recorded ${what} after ${tries + 1} tries`)
        return written
      } catch (next) {
        error = next
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#waits.delete(wait)
        resolve()
      }
      const wait = { timer: setTimer(done, ms, this.#unref), resolve }
      this.#waits.add(wait)
    })
  }
}
