/**
 * Recovery: what a durable store holds when an engine starts on it (after
 * a restart, or beside other processes) is picked up again. Pending timers
 * are re-armed, scheduled runs that lost their delay get it back, running
 * runs with no retry pending are dispatched again (at-least-once: an
 * attempt that was in flight runs again), the waitpoints of suspended runs
 * are re-armed, resuming those already met, queued runs start if
 * their limits allow, and live runs with a deadline get back a deadline
 * timer they lack.
 *
 * On a store several processes share, the sweeps (`shared-work.ts`) find
 * due timers and orphaned attempts, so recovering is starting the sweeps,
 * plus what no timer stands for.
 */
import type { Logger, RunRecord } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import type { Dispatcher } from './dispatch.ts'
import type { FlowPromotion } from './flow-promotion.ts'
import { timerId } from '../base/ids.ts'
import { missingDeadlines } from '../steps/deadlines.ts'
import type { TimerRecord } from '../store/store.ts'
import type { SharedWorkClaims } from './shared-work.ts'
import type { RunStore } from '../store/store.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'

export interface RecoveryOptions {
  store: RunStore
  logger: Logger
  waitpoints: Waitpoints
  dispatch: Dispatcher
  flow: FlowPromotion
  /** On a store several processes share. */
  sharedWork: SharedWorkClaims | undefined
  /** Arms the timers that runtime schedules lack among `timers`, the store's (runtime-schedules.ts). */
  schedules(timers: readonly TimerRecord[]): Promise<void>
}

export class Recovery {
  readonly #store: RunStore
  readonly #logger: Logger
  readonly #waitpoints: Waitpoints
  readonly #dispatch: Dispatcher
  readonly #flow: FlowPromotion
  readonly #sharedWork: SharedWorkClaims | undefined
  readonly #schedules: (timers: readonly TimerRecord[]) => Promise<void>
  /** The next look at running runs other processes held (`#claimRunning`). */
  #recheck: ReturnType<typeof setTimeout> | undefined
  #closed = false

  constructor(options: RecoveryOptions) {
    this.#store = options.store
    this.#logger = options.logger
    this.#waitpoints = options.waitpoints
    this.#dispatch = options.dispatch
    this.#flow = options.flow
    this.#sharedWork = options.sharedWork
    this.#schedules = options.schedules
  }

  async recover(): Promise<void> {
    if (this.#sharedWork) return this.#recoverShared(this.#sharedWork)
    const retrying = new Set<string>()
    const delayed = new Set<string>()
    const timers = await this.#waitpoints.rearm()
    for (const timer of timers) {
      if (timer.kind === 'retry') retrying.add(timer.runId)
      if (timer.kind === 'delay') delayed.add(timer.runId)
    }
    // A process that took a delay timer and died before the run went
    // `running` leaves a scheduled run with no timer; nothing else starts it.
    const scheduled = await this.#store.listRuns({ status: 'scheduled' })
    for (const run of scheduled) {
      if (delayed.has(run.id)) continue
      await this.#waitpoints.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt ?? run.createdAt })
    }
    const [running, suspended] = await Promise.all([
      this.#store.listRuns({ status: 'running' }),
      this.#store.listRuns({ status: 'suspended' }),
    ])
    await this.#armMissing([...scheduled, ...running, ...suspended], timers)
    const orphans = running.filter((run) => !retrying.has(run.id))
    if (this.#store.claimRunning) await this.#claimRunning(orphans)
    else for (const run of orphans) this.#dispatch.start(run)
    for (const run of suspended) await this.#waitpoints.armWaitpoint(run)
    await this.#flow.startAllQueued()
  }

  /**
   * Arms the deadline timers that `live` (the runs recovery read, queued
   * ones read here) lack among `timers`: a process that died between
   * recording a run and its deadline timer left none (deadlines.ts).
   * Runtime schedules get theirs back likewise.
   */
  async #armMissing(live: RunRecord[], timers: readonly TimerRecord[]): Promise<void> {
    const queued = await this.#store.listRuns({ status: 'queued' })
    for (const timer of missingDeadlines([...live, ...queued], timers)) await this.#waitpoints.arm(timer)
    // So do the schedules whose maker died before writing their timer.
    await this.#schedules(timers)
  }

  /** Looks again at nothing more. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#recheck)
  }

  /**
   * Starts the running runs no live process holds (`RunStore.claimRunning`):
   * on a file other live processes share, the attempts they have in flight
   * are theirs. The others are asked about again when the store says their
   * holder may have gone (its heartbeat lapsing), until none is left
   * running: a holder that is a process restarted in another PID namespace
   * (a container) can only be told gone that way.
   */
  async #claimRunning(running: RunRecord[]): Promise<void> {
    const { claimed, recheckInMs } = await this.#store.claimRunning!(running.map((run) => run.id))
    const ours = new Set(claimed)
    for (const run of running) if (ours.has(run.id)) this.#dispatch.start(run)
    const left = running.filter((run) => !ours.has(run.id)).map((run) => run.id)
    if (recheckInMs === undefined || left.length === 0 || this.#closed) return
    clearTimeout(this.#recheck)
    // Unref'd: runs other processes hold never keep this one alive.
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined
      this.#claimAgain(left).catch((error: unknown) =>
        this.#logger.error(`[svc] task runtime: could not look again at runs other processes held: ${errorMessage(error)}`),
      )
    }, recheckInMs)
    this.#recheck.unref?.()
  }

  async #claimAgain(ids: string[]): Promise<void> {
    if (this.#closed) return
    const runs = await Promise.all(ids.map((id) => this.#store.getRun(id)))
    const running = runs.filter((run): run is RunRecord => run?.status === 'running')
    if (running.length > 0) await this.#claimRunning(running)
  }

  /**
   * What no timer stands for on a shared store: suspended runs whose token
   * or child finished while no process was there to resume them, and
   * scheduled runs that lost their delay timer. Then the sweeps start.
   */
  async #recoverShared(sharedWork: SharedWorkClaims): Promise<void> {
    if (this.#closed || sharedWork.started) return
    const delayed = new Set<string>()
    const timers = await this.#store.listTimers()
    for (const timer of timers) if (timer.kind === 'delay') delayed.add(timer.runId)
    const scheduled = await this.#store.listRuns({ status: 'scheduled' })
    for (const run of scheduled) {
      if (delayed.has(run.id)) continue
      await this.#waitpoints.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt ?? run.createdAt })
    }
    const [running, suspended] = await Promise.all([
      this.#store.listRuns({ status: 'running' }),
      this.#store.listRuns({ status: 'suspended' }),
    ])
    await this.#armMissing([...scheduled, ...running, ...suspended], timers)
    for (const run of suspended) {
      if (run.suspended?.waitpoint.type !== 'sleep') await this.#waitpoints.armWaitpoint(run)
    }
    await this.#flow.startAllQueued()
    await sharedWork.start()
  }
}
