/**
 * What an attempt's outcome writes: the transitions out of `running` (the
 * diagram in `engine.ts`). A result completes the run; a failure appends
 * the attempt and arms a retry while retries remain, and fails the run
 * once none do; an unmet wait suspends the run and arms its waitpoint.
 * Each write is a compare-and-set on `running`, so a run cancelled or taken
 * over meanwhile is left as it is, and each is tried again until it lands
 * (outcome-writes.ts): the attempt's work is done, and a store that fails
 * a write for a while must not lose it. Then what follows a run's end
 * here: its change, its waiters and waiting parents woken, a slot freed.
 *
 * The dispatch (`dispatch.ts`) calls these in the order an attempt ends.
 */
import type { Attempt, Logger, RunCompensation, RunRecord } from '../../types.ts'
import { MIN_COMPENSATION_ATTEMPTS } from '../steps/compensations.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { backoffDelay } from '../base/backoff.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import type { RunChanges } from '../store/run-changes.ts'
import type { FlowPromotion } from './flow-promotion.ts'
import type { InvocationOutcome } from '../steps/handler-call.ts'
import { timerId } from '../base/ids.ts'
import type { InFlight } from './in-flight.ts'
import { OutcomeWrites, type WriteOwner } from './outcome-writes.ts'
import type { RunStore } from '../store/store.ts'
import type { RunWaiters } from '../steps/wait-for-run.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'
import type { Telemetry } from '../../telemetry/types.ts'

/** The expectation of every transition out of `running`. */
const RUNNING = Object.freeze({ status: 'running' as const })

export interface OutcomeRecorderOptions {
  store: RunStore
  tasks: ReadonlyMap<string, TaskDefinition>
  logger: Logger
  /** What runs' end stamps and retries' due times are read from. */
  clock: Clock
  changes: RunChanges
  waiters: RunWaiters
  waitpoints: Waitpoints
  flow: FlowPromotion
  /** Told of each run that finishes here. */
  telemetry?: Telemetry | undefined
  /** Unreference the waits between tries of a write where the platform supports it. */
  unrefTimers: boolean
}

export class OutcomeRecorder {
  readonly #store: RunStore
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  readonly #clock: Clock
  readonly #changes: RunChanges
  readonly #waiters: RunWaiters
  readonly #waitpoints: Waitpoints
  readonly #flow: FlowPromotion
  readonly #telemetry: Telemetry | undefined
  /** Each write of an outcome, tried until it lands. */
  readonly #writes: OutcomeWrites
  #closed = false

  constructor(options: OutcomeRecorderOptions) {
    this.#store = options.store
    this.#tasks = options.tasks
    this.#logger = options.logger
    this.#clock = options.clock
    this.#changes = options.changes
    this.#waiters = options.waiters
    this.#waitpoints = options.waitpoints
    this.#flow = options.flow
    this.#telemetry = options.telemetry
    this.#writes = new OutcomeWrites({ logger: options.logger, unrefTimers: options.unrefTimers })
  }

  /**
   * Moves a running run to `status`; resolves to the finished run, or to
   * nothing when it was no longer running. Not async: every run whose end
   * is being written would hold its frame.
   */
  finishRun(
    entry: WriteOwner,
    patch: {
      status: 'completed' | 'failed' | 'cancelled' | 'compensation_failed'
      ok: boolean
      result?: unknown
      attempt?: Attempt
      compensation?: RunCompensation
    },
  ): Promise<RunRecord | undefined> {
    // One patch for every try: its time tells a store its own earlier write (store.ts, `showsPatch`).
    const end = { ...patch, finishedAt: isoNowOf(this.#clock), suspended: undefined, attemptStarted: undefined }
    return this.#writes.persist(entry, 'its end', () => this.#store.updateRun(entry.id, end, RUNNING))
  }

  /**
   * What follows a run's end here, `entry` being its dispatch: its change,
   * a failure logged, its waiters and waiting parents woken, a slot freed.
   * Nothing when `done` is undefined (the run was no longer running).
   */
  announceEnd(entry: InFlight, done: RunRecord | undefined, error?: string, attempts?: number): void {
    if (!done) return
    entry.ended = true
    this.#telemetry?.runFinished(done)
    this.#changes.emit(done)
    if (done.status === 'failed' || done.status === 'compensation_failed') {
      // A background failure is never silent: it is logged with the task it came from.
      const after = attempts === undefined ? '' : ` after ${attempts} attempt${attempts === 1 ? '' : 's'}`
      const cron = done.trigger === 'cron' ? 'scheduled ' : ''
      this.#logger.error(`[svc] ${cron}task "${done.taskName}" failed${after} (run ${done.id}): ${error}`)
    }
    // Wake its waiters and every suspended run that waits for it.
    this.#waiters.settle(done)
    this.#waitpoints.finished(done)
    this.#flow.startQueuedLater(done.taskName)
  }

  /** Records an attempt that failed (a retry armed, or the run failed), or the suspension of a run. */
  async recordFailedOrSuspended(
    entry: InFlight,
    outcome: Exclude<InvocationOutcome, { kind: 'completed' | 'interrupted' }>,
  ): Promise<void> {
    if (outcome.kind === 'suspended') return this.#suspend(entry, outcome)
    // An attempt cut short by close() is not the task's failure: record
    // nothing, so the run stays `running` and a durable store's recover()
    // runs it again.
    if (this.#closed) return
    if (outcome.kind === 'compensated' || outcome.compensating) return this.#compensationEnded(entry, outcome)
    const { attempt } = outcome
    const index = attempt.index
    const retries = this.#tasks.get(entry.taskName)!.retries
    // After close() the retry timer is still recorded (Waitpoints.arm saves
    // it and skips the in-process timer), so a durable store can pick it up.
    if (index <= retries && !outcome.final) {
      await this.#writes.persist(entry, `attempt ${index}`, () => this.#store.appendAttempt(entry.id, attempt))
      const delay = backoffDelay(index)
      this.#logger.warn(
        `[svc] task "${entry.taskName}": attempt ${index} of ${retries + 1} failed (run ${entry.id}): ${outcome.error}; retrying in ${delay} ms`,
      )
      // No later than the run's deadline, where its dispatch fails it (attempt-calls.ts).
      return this.#retryAt(entry, Math.min(this.#clock.now() + delay, entry.deadline === undefined ? Infinity : Date.parse(entry.deadline)))
    }
    if (outcome.compensable) {
      // Failed for good with steps to undo: the run goes on, compensating (compensations.ts).
      const compensation = { reason: 'failed' as const, status: 'running' as const, error: outcome.error, failures: 0 }
      await this.#writes.persist(entry, `attempt ${index}`, () => this.#store.updateRun(entry.id, { attempt, compensation }, RUNNING))
      this.#logger.warn(`[svc] task "${entry.taskName}" failed (run ${entry.id}): ${outcome.error}; undoing its completed steps`)
      return this.#retryAt(entry, this.#clock.now())
    }
    this.announceEnd(entry, await this.finishRun(entry, { status: 'failed', ok: false, attempt }), outcome.error, index)
  }

  /**
   * The end of an attempt that compensated the run: every undo ran, and the
   * run ends `failed`; or one threw, and it
   * is tried again with the task's backoff until its attempts are spent,
   * when the run ends `compensation_failed`.
   */
  async #compensationEnded(entry: InFlight, outcome: Extract<InvocationOutcome, { kind: 'failed' | 'compensated' }>): Promise<void> {
    const run = await this.#store.getRun(entry.id)
    const started = run?.compensation
    if (run?.status !== 'running' || started === undefined) return
    if (outcome.kind === 'compensated') {
      const compensation = { ...started, status: 'completed' as const }
      const status = started.reason === 'cancelled' ? 'cancelled' : 'failed'
      this.announceEnd(entry, await this.finishRun(entry, { status, ok: false, compensation }), started.error)
      return
    }
    const { attempt, error } = outcome
    const failures = started.failures + 1
    const attempts = Math.max(this.#tasks.get(entry.taskName)!.retries + 1, MIN_COMPENSATION_ATTEMPTS)
    if (failures < attempts) {
      const compensation = { ...started, failures }
      await this.#writes.persist(entry, `attempt ${attempt.index}`, () =>
        this.#store.updateRun(entry.id, { attempt, compensation }, RUNNING),
      )
      this.#logger.warn(`[svc] task "${entry.taskName}": a compensation of run ${entry.id} failed (${failures} of ${attempts}): ${error}`)
      return this.#retryAt(entry, this.#clock.now() + backoffDelay(failures))
    }
    const failed = { step: attempt.step?.slice('compensate:'.length) ?? '', error }
    const compensation = { ...started, failures, status: 'failed' as const, failed }
    const done = await this.finishRun(entry, { status: 'compensation_failed', ok: false, attempt, compensation })
    this.announceEnd(entry, done, `${started.error}; then its compensation failed ${failures} times: ${error}`, attempt.index)
  }

  /** Arms the run's next attempt at `dueMs`. */
  async #retryAt(entry: InFlight, dueMs: number): Promise<void> {
    const retry = { id: timerId(entry.id, 'retry'), runId: entry.id, kind: 'retry' as const, dueAt: new Date(dueMs).toISOString() }
    await this.#writes.persist(entry, 'its retry', () => this.#waitpoints.arm(retry))
  }

  /** From now on, a failed attempt records nothing, and a write that fails is not tried again: the engine closed under it. */
  close(): void {
    this.#closed = true
    this.#writes.close()
  }

  async #suspend(entry: InFlight, outcome: Extract<InvocationOutcome, { kind: 'suspended' }>): Promise<void> {
    const { stepKey, waitpoint } = outcome.signal
    if (outcome.swallowed) {
      this.#logger.warn(
        `[svc] task "${entry.taskName}": the handler caught the suspension of step "${stepKey}" instead of letting it unwind; the run is suspended anyway. Rethrow it from catch blocks: if (isSuspension(error)) throw error`,
      )
    }
    const suspension = {
      status: 'suspended' as const,
      suspended: { stepKey, waitpoint, since: isoNowOf(this.#clock) },
      attemptStarted: outcome.attemptStarted,
    }
    const saved = await this.#writes.persist(entry, 'its suspension', () => this.#store.updateRun(entry.id, suspension, RUNNING))
    if (!saved) return
    // A cancel that compensates came while the attempt ran (cancel-compensating.ts): the run undoes rather than waits.
    if (saved.compensation?.status === 'running') {
      const back = await this.#writes.persist(entry, 'its compensation', () =>
        this.#store.updateRun(entry.id, { status: 'running', suspended: undefined }, { status: 'suspended' }),
      )
      if (back) return this.#retryAt(entry, this.#clock.now())
      return
    }
    this.#changes.emit(saved)
    // A suspended run holds no slot.
    this.#flow.startQueuedLater(saved.taskName)
    // Until its wait is armed, nothing would wake the run: the attempt's
    // lease stays on it meanwhile, so that should this process die, another
    // takes the run over and arms the wait (shared-work.ts).
    await this.#writes.persist(entry, `the wait of step "${stepKey}"`, () => this.#waitpoints.armWaitpoint(saved))
  }
}
