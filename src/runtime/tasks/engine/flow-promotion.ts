/**
 * Flow promotion: queued runs started when a limit frees a place. A task
 * with `concurrency` or `rateLimit` starts its runs `queued`; the store's
 * `startQueued` moves those its limits allow to `running`, atomically in
 * every store, so callers racing in any process never exceed them. The
 * engine asks again whenever a run of the task stops holding a slot
 * (finished, suspended, cancelled); when the rate limit blocks one, a
 * `queue` timer asks again once its window frees a place. What the limits
 * allow is `flow.ts`'s rule; this is when the engine asks.
 */
import type { Logger, RunRecord } from '../../types.ts'
import { errorMessage } from '../../errors.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import type { RunChanges } from '../store/run-changes.ts'
import { limitsStarts } from '../flow/flow.ts'
import type { RunStore, TimerRecord } from '../store/store.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'

export interface FlowPromotionOptions {
  store: RunStore
  tasks: ReadonlyMap<string, TaskDefinition>
  logger: Logger
  /** What rate windows, priority aging and start stamps are reckoned by. */
  clock: Clock
  changes: RunChanges
  /** Starts an attempt of a run that is now `running`. */
  start(run: RunRecord): void
  /** Records and arms a timer: the `queue` timer of a rate window. */
  arm(timer: TimerRecord): Promise<void>
}

export class FlowPromotion {
  readonly #store: RunStore
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  readonly #clock: Clock
  readonly #changes: RunChanges
  readonly #start: (run: RunRecord) => void
  readonly #arm: (timer: TimerRecord) => Promise<void>
  /** Whether some task has `concurrency` or `rateLimit`. */
  readonly #limited: boolean
  /** Per task, the `startQueued` call under way, and the one that follows it. */
  readonly #calls = new Map<string, { current: Promise<void>; next?: Promise<void> }>()
  #closed = false

  constructor(options: FlowPromotionOptions) {
    this.#store = options.store
    this.#tasks = options.tasks
    this.#logger = options.logger
    this.#clock = options.clock
    this.#changes = options.changes
    this.#start = options.start
    this.#arm = options.arm
    this.#limited = [...options.tasks.values()].some((def) => limitsStarts(def.flow))
  }

  /** The status a run of this task takes when it may start: `queued` under `concurrency` or `rateLimit`. */
  startStatus(taskName: string): 'running' | 'queued' {
    return limitsStarts(this.#tasks.get(taskName)?.flow) ? 'queued' : 'running'
  }

  /**
   * Starts the queued runs of a task that its limits let start now. Calls
   * for one task while one is under way wait for it and make one more,
   * together: the one under way may have read the queue before what they
   * were called for (a run queued, a slot freed), and one more read after
   * it sees all of that. A trigger of a queued task calls this, and each
   * call reads the task's whole queue (a run aged past the others may be
   * anywhere in it): uncoalesced, a deep queue fed faster than it drained
   * made every trigger read it, one after another.
   */
  startQueued(taskName: string): Promise<void> {
    const calls = this.#calls.get(taskName)
    if (!calls) return this.#call(taskName)
    calls.next ??= calls.current.then(
      () => this.#call(taskName),
      () => this.#call(taskName),
    )
    return calls.next
  }

  #call(taskName: string): Promise<void> {
    const current = this.#startOnce(taskName)
    this.#calls.set(taskName, { current })
    const settled = () => {
      const calls = this.#calls.get(taskName)
      if (calls?.current === current && calls.next === undefined) this.#calls.delete(taskName)
    }
    current.then(settled, settled)
    return current
  }

  async #startOnce(taskName: string): Promise<void> {
    const def = this.#tasks.get(taskName)
    if (this.#closed || !def || !limitsStarts(def.flow)) return
    const { started, wake } = await this.#store.startQueued(taskName, def.flow, isoNowOf(this.#clock))
    for (const run of started) {
      this.#changes.emit(run)
      this.#start(run)
    }
    if (wake) await this.#arm({ id: `${taskName}:queue`, runId: wake.runId, kind: 'queue', dueAt: wake.at })
  }

  /** `startQueued` from a path that does not wait for it; a failure is logged with the task. */
  startQueuedLater(taskName: string): void {
    if (!limitsStarts(this.#tasks.get(taskName)?.flow)) return
    this.startQueued(taskName).catch((error) =>
      this.#logger.error(`[svc] task "${taskName}": could not start its queued runs: ${errorMessage(error)}`),
    )
  }

  /** A rate window of this run's task freed a place (its `queue` timer fired). */
  async windowFreed(runId: string): Promise<void> {
    const run = await this.#store.getRun(runId)
    if (run) await this.startQueued(run.taskName)
  }

  /** After a restart, and in each sweep of a shared store: starts the queued runs of every task whose limits allow it. */
  async startAllQueued(): Promise<void> {
    if (!this.#limited) return
    // Counted, not listed: only which tasks have queued runs matters here.
    for (const { taskName } of await this.#store.countRunsByTask('queued')) await this.startQueued(taskName)
  }

  /** Starts nothing more. */
  close(): void {
    this.#closed = true
  }
}
