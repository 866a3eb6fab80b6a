/**
 * This engine's share of the work on a store several processes share
 * (`RunStore.shared`; docs/internals/postgres-store.md "Claims and
 * leases"): every process claims work there, and whichever live process
 * claims a piece first does it.
 *
 * - `claimDueWork`, on the rhythm of a `Sweeper`: due timers, and attempts
 *   whose process died (no live lease), are claimed and started; waiters of
 *   runs another process finished are answered; queued runs a dead process
 *   left are started.
 * - `renewLeases`: every attempt in flight here runs under a lease on its
 *   run (taken and given up by its dispatch, `dispatch.ts`), renewed every
 *   third of `leaseMs`. An attempt whose lease is gone is aborted.
 * - `stopTakingWork` when the engine drains, and `handOver` when it closes:
 *   its leases go back and the others are woken, so they take its attempts
 *   over at once rather than after `leaseMs`.
 */
import type { Logger, RunRecord } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import type { Dispatcher } from './dispatch.ts'
import type { FlowPromotion } from './flow-promotion.ts'
import type { SharedWork } from '../store/store.ts'
import { Sweeper } from './sweeper.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import type { RunVersions } from '../definitions/versions.ts'
import type { RunWaiters } from '../steps/wait-for-run.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'

/** How many timers or orphaned attempts one sweep claims per query. */
const SWEEP_BATCH = 100

export interface SharedWorkClaimsOptions {
  shared: SharedWork
  /** This engine's id on the store: what it claims, it claims under this. */
  owner: string
  logger: Logger
  unrefTimers: boolean
  /** What the due time of timers is compared with (leases stay on the store's own time). */
  clock: Clock
  dispatch: Dispatcher
  waitpoints: Waitpoints
  waiters: RunWaiters
  flow: FlowPromotion
  /** The versions this process serves, which it registers, and the others' it leaves to them (versions.ts). */
  versions: RunVersions
}

export class SharedWorkClaims {
  readonly #shared: SharedWork
  readonly #owner: string
  readonly #logger: Logger
  readonly #clock: Clock
  readonly #dispatch: Dispatcher
  readonly #waitpoints: Waitpoints
  readonly #waiters: RunWaiters
  readonly #flow: FlowPromotion
  readonly #versions: RunVersions
  readonly #sweeper: Sweeper
  #closed = false
  /** Draining (on its way out): takes no more work from the store. */
  #draining = false

  constructor(options: SharedWorkClaimsOptions) {
    this.#shared = options.shared
    this.#owner = options.owner
    this.#logger = options.logger
    this.#clock = options.clock
    this.#dispatch = options.dispatch
    this.#waitpoints = options.waitpoints
    this.#waiters = options.waiters
    this.#flow = options.flow
    this.#versions = options.versions
    this.#sweeper = new Sweeper({
      shared: options.shared,
      logger: options.logger,
      unref: options.unrefTimers,
      clock: options.clock,
      claimDueWork: () => this.claimDueWork(),
      renewLeases: () => this.renewLeases(),
    })
  }

  /** Whether the sweeps have started (`start`). */
  get started(): boolean {
    return this.#sweeper.started
  }

  /** Whether a sweep now would claim anything: not once the engine drains or closes. */
  get takingWork(): boolean {
    return !this.#closed && !this.#draining
  }

  /** Starts sweeping and renewing, until `handOver`. */
  async start(): Promise<void> {
    await this.#versions.register()
    return this.#sweeper.start()
  }

  /**
   * One sweep: acts on the due timers it claims, takes over the attempts
   * nobody holds a lease on, and answers `waitForRun` callers whose run
   * finished in another process. Resolves to when the next timer is due.
   */
  async claimDueWork(): Promise<number | undefined> {
    const shared = this.#shared
    for (;;) {
      if (!this.takingWork) return undefined
      const timers = await shared.claimDueTimers(this.#owner, isoNowOf(this.#clock), SWEEP_BATCH)
      await Promise.all(
        timers.map((timer) =>
          this.#waitpoints
            .fireClaimed(timer)
            .catch((error) =>
              this.#logger.error(`[svc] task runtime: timer ${timer.id} of run ${timer.runId} failed: ${errorMessage(error)}`),
            ),
        ),
      )
      if (timers.length < SWEEP_BATCH || !this.takingWork) break
    }
    if (!this.takingWork) return undefined
    const orphans = await shared.claimOrphanedRuns(this.#owner, SWEEP_BATCH, await this.#versions.skipped())
    if (!this.takingWork) {
      // Claimed by a sweep that was under way when the engine began to drain: they go back.
      if (orphans.length > 0) {
        await shared.releaseLeases(
          this.#owner,
          orphans.map((run) => run.id),
        )
        await shared.wake()
      }
      return undefined
    }
    for (const run of orphans) {
      if (run.status === 'running') {
        this.#dispatch.start(run, true)
        continue
      }
      await this.#armOrphanWait(run).catch((error: unknown) =>
        this.#logger.error(`[svc] task "${run.taskName}": could not arm the wait of suspended run ${run.id}: ${errorMessage(error)}`),
      )
    }
    await this.#waiters.refresh()
    // A process that died between queuing a run and asking for its slot
    // left it for whichever process looks next.
    await this.#flow.startAllQueued()
    const next = await shared.nextDueAt()
    return next === undefined ? undefined : Date.parse(next)
  }

  /**
   * Renews the leases of the attempts in flight here. An attempt whose
   * lease was lost is aborted (`Dispatcher.abortLostLease`).
   */
  async renewLeases(): Promise<void> {
    await this.#versions.register()
    const ids = this.#dispatch.leasedRunIds()
    if (ids.length === 0) return
    const held = new Set(await this.#shared.renewLeases(this.#owner, ids))
    for (const id of ids) if (!held.has(id)) this.#dispatch.abortLostLease(id)
  }

  /**
   * Takes no more work: a process drains on its way out, and live
   * processes take the due work and orphaned attempts instead. The leases
   * of its attempts in flight are still renewed.
   */
  stopTakingWork(): void {
    this.#draining = true
    this.#sweeper.pause()
  }

  /**
   * Stops sweeping, gives up every lease of this engine and wakes the
   * other processes; settles once they are told. Never rejects: a failure
   * is logged, and the attempts run again once their leases lapse.
   */
  async handOver(): Promise<void> {
    this.#closed = true
    const shared = this.#shared
    try {
      // Stopping (no new sweep from here) happens at once; waiting for the
      // sweep in progress and for UNLISTEN takes round trips the others
      // need not wait for.
      const stopped = this.#sweeper.stop()
      // The leases of attempts whose end could not be recorded stay, to lapse (outcome-writes.ts).
      const kept = this.#dispatch.keptLeases()
      await this.#versions.unregister()
      await shared.releaseLeases(this.#owner, undefined, kept)
      await shared.wake()
      if (await stopped) {
        // A sweep in progress may have claimed attempts since; they go back too.
        await shared.releaseLeases(this.#owner, undefined, kept)
        await shared.wake()
      }
    } catch (error) {
      this.#logger.error(
        `[svc] task runtime: could not hand this process's attempts over: ${errorMessage(error)}; they run again once their leases lapse`,
      )
    }
  }

  /**
   * Arms the wait of a suspended run claimed as an orphan (its process died
   * between suspending it and arming the wait, or arming failed there),
   * then gives the claim up. Should arming fail here too, the claim is
   * kept: it lapses, and the next sweep takes the run again; a claim given
   * up would leave a run that nothing wakes.
   */
  async #armOrphanWait(run: RunRecord): Promise<void> {
    const shared = this.#shared
    // A met wait for a child resumes the run at once, and the attempt
    // takes its own lease: this claim goes first, or it would end that one.
    // (Should arming fail then, the finished child brings the run back as
    // an orphan of its own kind.)
    const met = run.suspended?.waitpoint.type === 'task'
    if (met) await shared.releaseLeases(this.#owner, [run.id])
    await this.#waitpoints.armWaitpoint(run)
    // Unless arming resumed the run and dispatched it here: that attempt
    // took the lease for itself, and gives it up when it ends.
    if (!met && !this.#dispatch.has(run.id)) await shared.releaseLeases(this.#owner, [run.id])
  }
}
