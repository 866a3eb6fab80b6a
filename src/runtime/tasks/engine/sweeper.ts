/**
 * The rhythm of an engine on a shared store: it sweeps for due work every
 * `pollMs`, at once when another process wakes it, and at the due time of
 * the earliest timer when that comes before the next poll; and it renews
 * its leases every third of `leaseMs`, so a live process never loses one,
 * and whenever another process wakes it (a run may have been cancelled
 * there). What a sweep does is `SharedWorkClaims.claimDueWork`
 * (`shared-work.ts`), passed in as a callback.
 */
import type { Logger } from '../../types.ts'
import { StoreUnavailableError, errorMessage } from '../../errors.ts'
import type { SharedWork } from '../store/store.ts'
import { setTimer } from '../base/in-process-timers.ts'
import type { Clock } from '../base/clock.ts'

export interface SweeperOptions {
  shared: SharedWork
  logger: Logger
  unref: boolean
  /**
   * What the next timer's due time is compared with. The sweeps and lease
   * renewals themselves keep to wall time (`setTimer`): leases lapse on the
   * store's time, and other processes' work comes in real time.
   */
  clock: Clock
  /** Claims and runs what is due; resolves to when the next timer is due (epoch ms), if known. */
  claimDueWork(): Promise<number | undefined>
  /** Renews the leases of the attempts in flight. */
  renewLeases(): Promise<void>
}

type Handle = ReturnType<typeof setTimeout>

export class Sweeper {
  readonly #options: SweeperOptions
  #poll: Handle | undefined
  #renew: Handle | undefined
  #unlisten: (() => Promise<void>) | undefined
  #running: Promise<void> | undefined
  #again = false
  #stopped = true
  #paused = false
  /** The last sweep failed because the store could not be used. */
  #unavailable = false

  constructor(options: SweeperOptions) {
    this.#options = options
  }

  get started(): boolean {
    return !this.#stopped
  }

  /** Listens for wake-ups, sweeps once, and keeps sweeping and renewing until `stop()`. */
  async start(): Promise<void> {
    if (!this.#stopped) return
    this.#stopped = false
    const { shared, logger } = this.#options
    try {
      // A wake-up may also mean that a run was cancelled: renewing at once
      // finds out whether an attempt here lost its lease.
      const unlisten = await shared.subscribe(() => {
        this.wake()
        this.#renewNow()
      })
      if (this.#stopped) await unlisten()
      else this.#unlisten = unlisten
    } catch (error) {
      logger.warn(`[svc] task runtime: cannot listen for wake-ups (${errorMessage(error)}); polling every ${shared.pollMs} ms instead`)
    }
    this.#renew = this.#every(Math.max(1, Math.floor(shared.leaseMs / 3)), () => this.#options.renewLeases())
    this.wake()
  }

  /**
   * Takes no more work: no sweep starts after this call, while leases are
   * still renewed for the attempts in flight (a process that drains).
   */
  pause(): void {
    this.#paused = true
    clearTimeout(this.#poll)
    this.#poll = undefined
  }

  /** Sweeps now; a wake-up during a sweep runs one more after it. */
  wake(): void {
    if (this.#stopped || this.#paused) return
    if (this.#running) {
      this.#again = true
      return
    }
    if (this.#poll !== undefined) clearTimeout(this.#poll)
    this.#poll = undefined
    this.#running = this.#sweepOnce().finally(() => {
      this.#running = undefined
      if (this.#again) {
        this.#again = false
        this.wake()
      }
    })
  }

  /**
   * Stops at once: no sweep or renewal starts after this call. Resolves once
   * the sweep in progress, if any, has ended (to true then) and the
   * process no longer listens.
   */
  async stop(): Promise<boolean> {
    this.#stopped = true
    clearTimeout(this.#poll)
    clearTimeout(this.#renew)
    this.#poll = this.#renew = undefined
    const unlisten = this.#unlisten
    this.#unlisten = undefined
    const running = this.#running
    await running
    await unlisten?.().catch(() => {})
    return running !== undefined
  }

  /** One sweep, then the next one armed: at the next poll, or when the next timer is due if sooner. */
  async #sweepOnce(): Promise<void> {
    let next: number | undefined
    try {
      next = await this.#options.claimDueWork()
      this.#unavailable = false
    } catch (error) {
      // A store that cannot be reached fails every sweep until it can: said once (the store says when it is back).
      const unavailable = error instanceof StoreUnavailableError
      if (!unavailable || !this.#unavailable)
        this.#options.logger.error(`[svc] task runtime: looking for due work failed: ${errorMessage(error)}`)
      this.#unavailable = unavailable
    }
    if (this.#stopped || this.#paused || this.#again) return
    const { pollMs } = this.#options.shared
    const delay = next === undefined ? pollMs : Math.min(pollMs, Math.max(0, next - this.#options.clock.now()))
    this.#poll = this.#timeout(delay, () => {
      this.#poll = undefined
      this.wake()
    })
  }

  #every(ms: number, task: () => Promise<void>): Handle {
    return this.#timeout(ms, () => {
      task()
        .catch((error) => this.#options.logger.error(`[svc] task runtime: renewing leases failed: ${errorMessage(error)}`))
        .finally(() => {
          if (!this.#stopped) this.#renew = this.#every(ms, task)
        })
    })
  }

  #renewNow(): void {
    if (this.#stopped) return
    this.#options
      .renewLeases()
      .catch((error) => this.#options.logger.error(`[svc] task runtime: renewing leases failed: ${errorMessage(error)}`))
  }

  #timeout(ms: number, fn: () => void): Handle {
    return setTimer(fn, ms, this.#options.unref)
  }
}
