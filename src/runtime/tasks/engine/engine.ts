/**
 * The task engine: the run API (`trigger`, `cancel`, `replay`,
 * `waitForRun`, `completeToken`, `onRunChange`, `drain`, `sweep`,
 * `close`) and the wiring of the parts that move runs through their
 * states. Every transition goes through the store with a compare-and-set
 * on the run's status, so a run is never dispatched twice for the same
 * reason, and the same code path serves in-process waits and durable
 * stores. The run states, and the file that makes each transition:
 *
 *   (none) ──trigger──▶ running | queued | scheduled                       run-creation.ts
 *   scheduled ──its delay passes──▶ running | queued                       waitpoints.ts
 *   queued ──a slot frees──▶ running                                       flow-promotion.ts
 *   running ──returns──▶ completed                                         attempt-outcome.ts
 *   running ──throws/times out, retries remain──▶ running (after backoff)  attempt-outcome.ts
 *   running ──throws/times out, none remain──▶ failed                      attempt-outcome.ts
 *   running ──unmet wait──▶ suspended                                      attempt-outcome.ts
 *   suspended ──waitpoint met──▶ running | queued (replay)                 waitpoints.ts
 *   scheduled | queued | running | suspended ──cancel──▶ cancelled         engine.ts
 *   scheduled | suspended on a sleep ──wake──▶ its timer due now            wake.ts
 *
 * The parts are wired in engine-parts.ts. `SharedWorkClaims` comes as an
 * option: `createTaskRuntime` passes it, while the runtimes the Cloudflare
 * worker makes itself, whose stores no other process shares, leave it out
 * of its bundle.
 */
import type {
  BatchItem,
  CancelledRun,
  CancelOptions,
  ReplayOptions,
  CompleteTokenResult,
  Logger,
  RunChange,
  RunRecord,
  TriggerOptions,
} from '../../types.ts'
import { describe } from '../../describe.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { RunFinishedError, RunNotFoundError, TaskNotFoundError, TaskNotScheduledError } from '../../errors.ts'
import { validateTaskInput } from '../../schema.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import type { Dispatcher } from './dispatch.ts'
import { engineParts, type TaskEngineOptions } from './engine-parts.ts'
import type { RunChanges } from '../store/run-changes.ts'
import type { FlowPromotion } from './flow-promotion.ts'
import { type CheckedTriggerOptions, checkTriggerOptions } from '../definitions/options.ts'
import type { Recovery } from './recovery.ts'
import type { RuntimeSchedules } from './runtime-schedules.ts'
import type { Retention } from '../store/retention.ts'
import type { RunCreation } from './run-creation.ts'
import type { ShardChildren } from '../steps/shard-children.ts'
import { cronInput, isCronInput, type ScheduledRuns } from './scheduled-runs.ts'
import type { SharedWorkClaims } from './shared-work.ts'
import { LIVE_STATUSES, type RunStore, type SharedWork } from '../store/store.ts'
import type { RunWaiters } from '../steps/wait-for-run.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'
import type { EventStarts } from './event-starts.ts'
import { wakeRun } from './wake.ts'
import { type SignalSendParts, sendSignal } from './signal-sends.ts'
import { type UpdateSendParts, updateRun } from './update-sends.ts'
import type { SendSignalOptions, SentSignal } from '../../types/signals.ts'
import type { UpdateRunOptions } from '../../types/updates.ts'
import { type CancelReach, cancelChildren, cancelChildRuns, childrenReached } from './cancel-children.ts'
import { cancelCompensating } from './cancel-compensating.ts'
import { checkReplayOptions, stepsBefore } from './replay-steps.ts'
import type { EventInput, SentEvent } from '../../types/events.ts'
import type { Telemetry } from '../../telemetry/types.ts'

export type { TaskEngineOptions } from './engine-parts.ts'

export class TaskEngine {
  readonly #store: RunStore
  /** What the cancel stamp is read from (the engine's drain and sweep budgets stay on wall time). */
  readonly #clock: Clock
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  readonly #telemetry: Telemetry | undefined
  readonly #changes: RunChanges
  readonly #waiters: RunWaiters
  readonly #waitpoints: Waitpoints
  readonly #flow: FlowPromotion
  readonly #dispatch: Dispatcher
  readonly #recovery: Recovery
  readonly #retention: Retention
  readonly #scheduled: ScheduledRuns
  /** On a store several processes share: how they split the work, and this engine's claims there. */
  readonly #shared: SharedWork | undefined
  readonly #sharedWork: SharedWorkClaims | undefined
  readonly #events: EventStarts
  /** Builds, records and starts every new run (run-creation.ts). */
  readonly #creation: RunCreation
  /** On one shard of several: the child runs that start in other shards. */
  readonly #children: ShardChildren | undefined
  /** Runtime schedules (`TaskRuntime.schedules`). */
  readonly schedules: RuntimeSchedules
  readonly #signals: SignalSendParts
  readonly #updates: UpdateSendParts
  #closed = false

  constructor(options: TaskEngineOptions) {
    const parts = engineParts(options, (name, payload, opts) => this.trigger(name, payload, opts))
    this.#store = parts.store
    this.#clock = parts.clock
    this.#tasks = options.tasks
    this.#logger = options.logger
    this.#telemetry = options.telemetry
    this.#shared = parts.shared
    this.#changes = parts.changes
    this.#waiters = parts.waiters
    this.#waitpoints = parts.waitpoints
    this.#flow = parts.flow
    this.#dispatch = parts.dispatch
    this.#sharedWork = parts.sharedWork
    this.#recovery = parts.recovery
    this.#retention = parts.retention
    this.#scheduled = parts.scheduled
    this.#events = parts.events
    this.#creation = parts.creation
    this.#children = parts.children
    this.schedules = parts.schedules
    this.#signals = parts.signals
    this.#updates = parts.updates
  }

  /** See `TaskRuntime.sendEvents`; `call` names the caller in errors. */
  sendEvents(events: readonly EventInput[], call: string): Promise<SentEvent[]> {
    if (this.#closed) return Promise.reject(new Error(`${call}: the task runtime is closed`))
    return this.#events.send(events, call)
  }

  trigger(name: string, payload?: unknown, opts?: TriggerOptions): Promise<RunRecord> {
    // Every misuse rejects rather than throws.
    try {
      if (this.#closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
      const def = this.#tasks.get(name)
      if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
      const options = checkTriggerOptions(opts, 'trigger', name)
      // Scheduled runs skip validation and get { _cron: true }; a task
      // without a schema takes its payload as it is, without waiting a turn.
      if (options.trigger === 'cron') return this.#creation.create(def, cronInput(), options)
      if (def.input === undefined || def.input === null) return this.#start(def, payload, payload, options)
      return validateTaskInput(def.input, payload).then((input) => this.#start(def, payload, input, options))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** `RunCreation.create`, but for a child run whose place is another shard's: triggered there, with `payload` as given. */
  #start(def: TaskDefinition, payload: unknown, input: unknown, options: CheckedTriggerOptions): Promise<RunRecord> {
    const children = this.#children
    const there = children?.elsewhere(def, input, options)
    return there === undefined ? this.#creation.create(def, input, options) : children!.trigger(there, def.name, payload, options)
  }

  async replay(id: string, options?: ReplayOptions): Promise<RunRecord> {
    if (this.#closed) throw new Error(`Cannot replay run "${id}": the task runtime is closed`)
    const { fromStep, ...given } = checkReplayOptions(options)
    const source = await this.#store.getRun(id)
    if (!source) throw new RunNotFoundError(id)
    const def = this.#tasks.get(source.taskName)
    if (!def) throw new TaskNotFoundError(source.taskName, [...this.#tasks.keys()])
    const raw = 'input' in given ? given.input : source.input
    const input = isCronInput(raw) ? cronInput() : await validateTaskInput(def.input, raw)
    // Kept steps go in with the run's row, so no attempt starts before they are recorded.
    const steps = fromStep === undefined ? undefined : stepsBefore(source, fromStep)
    const again = { delaySeconds: 0, trigger: 'replay', replayOf: id, priority: source.priority, steps, tags: source.tags } as const
    return this.#creation.create(def, input, again)
  }

  async cancel(id: string, options?: CancelOptions): Promise<CancelledRun> {
    const children = cancelChildren(options)
    // What it waits on, read before the cancel clears it.
    const waited = children === 'none' ? undefined : await this.#store.getRun(id)
    const compensating = options?.compensate === true ? await this.#cancelCompensating(id) : undefined
    if (compensating) {
      this.#changes.emit(compensating)
      const reached = childrenReached(waited, compensating, children)
      return {
        ...compensating,
        cancelledWith: await cancelChildRuns(id, reached, (childId) => this.#cancelChild(childId, children), this.#logger),
      }
    }
    // A compare-and-set from any live status: a run that finished meanwhile stays as it ended.
    const run = await this.#store.updateRun(
      id,
      { status: 'cancelled', ok: false, finishedAt: isoNowOf(this.#clock), suspended: undefined },
      { status: LIVE_STATUSES },
    )
    if (!run) {
      const current = await this.#store.getRun(id)
      if (!current) throw new RunNotFoundError(id)
      throw new RunFinishedError(id, current.status)
    }
    this.#telemetry?.runFinished(run)
    this.#dispatch.cancelAttempt(run)
    await this.#waitpoints.dropRun(id)
    // Another process may run the attempt: woken, it renews its leases at
    // once, finds this one gone, and aborts the attempt there.
    await this.#shared?.wake()
    this.#changes.emit(run)
    this.#waiters.settle(run)
    this.#waitpoints.finished(run)
    // A slot it held is free; a rate-limit timer it carried is gone, so look again.
    this.#flow.startQueuedLater(run.taskName)
    // The parent first: cancelled, it is not resumed by its child's end.
    // The children it enqueued are read from the cancelled record: it has every step recorded before the cancel.
    const reached = childrenReached(waited, run, children)
    const cancelledWith = await cancelChildRuns(id, reached, (childId) => this.#cancelChild(childId, children), this.#logger)
    return { ...run, cancelledWith }
  }

  /** A cancel with `{ compensate: true }` of a run with steps to undo: its compensation begins (cancel-compensating.ts). */
  #cancelCompensating(id: string): Promise<RunRecord | undefined> {
    const dispatch = this.#dispatch
    const waitpoints = this.#waitpoints
    return cancelCompensating(
      {
        store: this.#store,
        dropTimers: (runId) => waitpoints.dropRun(runId),
        stopHere: (runId) => dispatch.stopForCompensation(runId),
        start: (run) => dispatch.start(run),
      },
      id,
    )
  }

  /** Cancels child run `childId` and those below it that `children` reaches, here or in the shard that holds it; `undefined` when it is out of reach. */
  async #cancelChild(childId: string, children: CancelReach): Promise<CancelledRun | undefined> {
    if (await this.#store.getRun(childId)) return this.cancel(childId, { children })
    const shard = this.#children?.holder(childId)
    return shard === undefined ? undefined : this.#children!.cancel(shard, childId, children)
  }

  /** See `TaskRuntime.wake`: the run's sleep or delay timer, due now (wake.ts). */
  wake(id: string): Promise<RunRecord> {
    if (this.#closed) return Promise.reject(new Error(`Cannot wake run "${id}": the task runtime is closed`))
    const waitpoints = this.#waitpoints
    return wakeRun({ store: this.#store, clock: this.#clock, arm: (timer) => waitpoints.arm(timer) }, id)
  }

  /** See `TaskRuntime.fireSchedule`: one tick of the task's schedule, now, whichever shard owns it. */
  async fireSchedule(name: string): Promise<RunRecord> {
    if (this.#closed) throw new Error(`Cannot fire task "${name}": the task runtime is closed`)
    const def = this.#tasks.get(name)
    if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
    if (!def.schedule) throw new TaskNotScheduledError(name)
    return this.#scheduled.fireNow(name, new Date(this.#clock.now()))
  }

  /** See `TaskRuntime.onRunChange`. */
  onRunChange(listener: (change: RunChange) => void, onEnd?: () => void): () => void {
    return this.#changes.subscribe(listener, onEnd)
  }

  /** One tick of a task's schedule (the scheduler's `fire` callback): `ScheduledRuns.fire`. */
  fireScheduled(name: string, tick: Date): Promise<RunRecord | undefined> {
    return this.#scheduled.fire(name, tick)
  }

  waitForRun(id: string): Promise<RunRecord> {
    return this.#waiters.wait(id, this.#dispatch.endsHere(id))
  }

  completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
    return this.#waitpoints.completeToken(tokenId, payload)
  }

  /** See `TaskRuntime.sendSignal` (signal-sends.ts). */
  async sendSignal(runId: string, name: string, data?: unknown, options?: SendSignalOptions): Promise<SentSignal> {
    if (this.#closed) throw new Error(`Cannot send signal "${name}" to run "${runId}": the task runtime is closed`)
    return sendSignal(this.#signals, runId, name, data, options)
  }

  /** See `TaskRuntime.updateRun` (update-sends.ts). */
  async updateRun(runId: string, name: string, data?: unknown, options?: UpdateRunOptions): Promise<unknown> {
    if (this.#closed) throw new Error(`Cannot send update "${name}" to run "${runId}": the task runtime is closed`)
    return updateRun(this.#updates, runId, name, data, options)
  }

  recover(): Promise<void> {
    this.#retention.start()
    return this.#recovery.recover()
  }

  async drain(timeoutMs = 30_000): Promise<void> {
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) {
      throw new TypeError(`drain(timeoutMs): timeoutMs must be a number of milliseconds, 0 or more (got ${describe(timeoutMs)})`)
    }
    // A process drains on its way out: on a shared store it takes no more
    // work from the others.
    this.#sharedWork?.stopTakingWork()
    // Open event streams would hold the server's drain of requests until its deadline.
    this.#changes.end()
    // Attempts may start more work (a retry, a resumed parent) while it
    // waits, so it looks again until nothing is in flight or time is up.
    const deadline = Date.now() + timeoutMs
    while (this.#dispatch.size > 0) {
      const left = deadline - Date.now()
      if (left <= 0) {
        this.#logger.warn(`[svc] task runtime: ${this.#dispatch.size} attempt(s) still in flight after ${timeoutMs} ms of draining`)
        return
      }
      await this.#dispatch.allOver(left)
    }
  }

  async sweep(options: { untilMs: number; claim?: boolean }): Promise<{ inFlight: number }> {
    const { untilMs, claim = true } = options ?? {}
    if (typeof untilMs !== 'number' || Number.isNaN(untilMs)) {
      throw new TypeError(`sweep({ untilMs }): untilMs must be a time in epoch milliseconds (got ${describe(untilMs)})`)
    }
    const sharedWork = this.#sharedWork
    if (claim && sharedWork?.takingWork) await sharedWork.claimDueWork()
    await this.#retention.due()
    const renewEvery = this.#shared ? Math.max(1, Math.floor(this.#shared.leaseMs / 3)) : Infinity
    while (this.#dispatch.size > 0 && Date.now() < untilMs) {
      await this.#dispatch.allOver(Math.min(untilMs - Date.now(), renewEvery))
      if (sharedWork && this.#dispatch.size > 0) await sharedWork.renewLeases()
    }
    return { inFlight: this.#dispatch.size }
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    this.#closed = true
    this.#flow.close()
    this.#recovery.close()
    this.#retention.close()
    this.#changes.end()
    this.#waitpoints.close()
    this.#dispatch.close()
    this.#waiters.rejectAll(new Error('The task runtime closed before the run finished'))
    // On a shared store the others take this process's attempts over at
    // once rather than after `leaseMs`; the promise settles once they are told.
    return this.#sharedWork ? this.#sharedWork.handOver() : Promise.resolve()
  }

  /** See `TaskRuntime.triggerMany`. */
  async triggerMany(name: string, payloads: readonly unknown[], opts?: TriggerOptions): Promise<BatchItem[]> {
    if (this.#closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
    const def = this.#tasks.get(name)
    if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
    return this.#creation.triggerMany(def, payloads, opts)
  }
}
