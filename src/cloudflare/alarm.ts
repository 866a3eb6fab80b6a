/**
 * The tasks object's one alarm. While the object is in memory its engine
 * fires timers in-process; the alarm is what wakes it once it has been
 * evicted (idle, a deploy, a restart), and waking runs the engine's
 * `recover()`, which fires what is due and runs again the attempts that were
 * cut off. So the alarm only has to be early enough, never exact:
 *
 * - at the earliest pending timer (delays, retry backoff, sleeps, token
 *   timeouts);
 * - while a run is `running`, at most `HEARTBEAT_MS` away, so an attempt cut
 *   off by an eviction is picked up again. Each alarm is also an event,
 *   which keeps the object in memory during a long attempt.
 */
import type { Logger } from '../types.ts'
import { errorMessage } from '../runtime/errors.ts'

/** How often a running attempt is checked on, at most. */
export const HEARTBEAT_MS = 30_000

/**
 * The shortest wait the alarm is set to. A timer that is already due is
 * being fired in-process; an alarm right now would only wake the object to
 * find it taken.
 */
export const MIN_ALARM_MS = 1000

/** The parts of a Durable Object's storage the clock uses. */
export interface AlarmStorageLike {
  setAlarm(scheduledTime: number): Promise<void> | void
}

export interface AlarmSource {
  /** Epoch ms of the earliest pending timer. */
  nextTimerAt(): number | undefined
  /** Whether an attempt is (or may be) in flight. */
  hasRunning(): boolean
}

export class AlarmClock {
  readonly #storage: AlarmStorageLike
  readonly #source: AlarmSource
  readonly #logger: Logger
  /** When the alarm is set for, as far as this instance knows; unknown after a wake. */
  #armedAt: number | undefined

  constructor(storage: AlarmStorageLike, source: AlarmSource, logger: Logger) {
    this.#storage = storage
    this.#source = source
    this.#logger = logger
  }

  /**
   * Moves the alarm earlier when the store now needs it earlier. A later
   * need leaves it be: an early alarm only wakes the object to set the next
   * one, which costs less than a storage write on every step.
   */
  update(): void {
    const now = Date.now()
    let at = this.#source.nextTimerAt()
    if (this.#source.hasRunning()) at = Math.min(at ?? Infinity, now + HEARTBEAT_MS)
    if (at === undefined) return
    at = Math.max(at, now + MIN_ALARM_MS)
    if (this.#armedAt !== undefined && this.#armedAt > now && this.#armedAt <= at) return
    this.#armedAt = at
    // Storage calls apply in the order they are made, so the last update wins.
    Promise.resolve(this.#storage.setAlarm(at)).catch((error) =>
      this.#logger.error(`[svc] tasks object: could not set its alarm: ${errorMessage(error)}`),
    )
  }

  /** The alarm went off (and is gone): set the next one from what is pending now. */
  fired(): void {
    this.#armedAt = undefined
    this.update()
  }
}
