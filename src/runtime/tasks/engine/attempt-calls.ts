/**
 * The middle of a dispatch (dispatch.ts): from a run whose lease is held
 * to the write of how its attempt ended. The run's task and version are
 * checked, the handler waits for a slot of `maxConcurrentRuns`
 * (handler-slots.ts), is called in an execution span (handler-call.ts),
 * and its outcome is written (attempt-outcome.ts). How the dispatch then
 * ends (its lease, its entry, a run handed over or dispatched again) is
 * the `Dispatcher`'s, told through `DispatchEnds`.
 */
import type { RunRecord } from '../../types.ts'
import type { ExecutionEnd, Telemetry } from '../../telemetry/types.ts'
import { OutcomeRecorder, type OutcomeRecorderOptions } from './attempt-outcome.ts'
import { AttemptTimeouts } from '../steps/attempt-timeouts.ts'
import { deadlineAttempt, pastDeadline } from '../steps/deadlines.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import { invoke, type InvocationOutcome, type Invoker } from '../steps/handler-call.ts'
import { DEFAULT_MAX_CONCURRENT_RUNS, HandlerSlots } from '../steps/handler-slots.ts'
import type { InFlight } from './in-flight.ts'
import type { StepHost } from '../steps/steps.ts'
import { hasSteps } from '../store/store.ts'
import type { RunVersions } from '../definitions/versions.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'

/** How a dispatch ends, as the `Dispatcher` ends it. */
export interface DispatchEnds {
  /** The dispatch is over: its lease goes back, then its entry. */
  release(entry: InFlight): void
  /** A step of the dispatch threw or rejected: logged, and the dispatch is over. */
  failed(entry: InFlight, error: unknown): void
  /** A run of another version: left to a live process of that version. */
  handOver(entry: InFlight): void
  /** The store could not serve the attempt: nothing is recorded, and the run goes again later. */
  interrupted(entry: InFlight, error: string): void
}

export interface AttemptCallsOptions extends OutcomeRecorderOptions {
  /** What the steps of every attempt reach. */
  host: StepHost
  /** Where each execution's span goes. */
  telemetry?: Telemetry | undefined
  /** Whether a run's version is this process's to run (versions.ts). */
  versions: RunVersions
  /** Most handlers running at once (handler-slots.ts). @default DEFAULT_MAX_CONCURRENT_RUNS */
  maxConcurrentRuns?: number
}

export class AttemptCalls {
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #clock: Clock
  readonly #versions: RunVersions
  readonly #telemetry: Telemetry | undefined
  readonly #ends: DispatchEnds
  /** What each attempt's outcome writes. */
  readonly #outcomes: OutcomeRecorder
  readonly #timeouts: AttemptTimeouts
  /** What every attempt started here shares, its timeouts among them. */
  readonly #invoker: Invoker<InFlight>
  /** The cap on handlers running at once, and the runs that wait for one. */
  readonly #slots: HandlerSlots

  constructor(options: AttemptCallsOptions, ends: DispatchEnds) {
    this.#tasks = options.tasks
    this.#clock = options.clock
    this.#versions = options.versions
    this.#telemetry = options.telemetry
    this.#ends = ends
    this.#outcomes = new OutcomeRecorder(options)
    this.#timeouts = new AttemptTimeouts(options.clock)
    this.#slots = new HandlerSlots(options.maxConcurrentRuns ?? DEFAULT_MAX_CONCURRENT_RUNS)
    this.#invoker = {
      host: options.host,
      // Attempt times are kept relative to when this engine began, on its clock.
      origin: options.clock.now(),
      timeouts: this.#timeouts,
      ended: (entry, outcome) => this.#attemptEnded(entry, outcome),
    }
  }

  /** Calls the handler of `run`, whose dispatch `entry` is, once its task and version are checked. */
  call(entry: InFlight, run: RunRecord): void {
    try {
      if (entry.stopped) {
        this.#ends.release(entry)
        return
      }
      const def = this.#tasks.get(run.taskName)
      if (!def) {
        const missing = `Task "${run.taskName}" is not registered in this runtime`
        this.#outcomes.finishRun(entry, { status: 'failed', ok: false }).then(
          (done) => this.#endWritten(entry, done, missing),
          (error: unknown) => this.#ends.failed(entry, error),
        )
        return
      }
      if (pastDeadline(run, this.#clock.now()) && run.compensation === undefined) {
        // Not started: its deadline passed while it waited (a retry's backoff, a restart); undos run past it.
        const attempt = deadlineAttempt(run, this.#clock.now())
        this.#outcomes.finishRun(entry, { status: 'failed', ok: false, attempt }).then(
          (done) => this.#endWritten(entry, done, attempt.error),
          (error: unknown) => this.#ends.failed(entry, error),
        )
        return
      }
      if (!this.#versions.matches(run)) {
        // Another version's run: handed to a process of it, moved to this one, or failed (versions.ts).
        this.#versions.check(run).then(
          (checked) => {
            if (checked.kind === 'run') this.#invoke(entry, def, checked.run)
            else if (checked.kind === 'hand-over') this.#ends.handOver(entry)
            else if (checked.kind === 'done') this.#endWritten(entry, undefined)
            else {
              const attempt = { index: run.attempts.length + 1, startedAt: isoNowOf(this.#clock), durationMs: 0, error: checked.error }
              this.#outcomes.finishRun(entry, { status: 'failed', ok: false, attempt }).then(
                (done) => this.#endWritten(entry, done, checked.error),
                (error: unknown) => this.#ends.failed(entry, error),
              )
            }
          },
          (error: unknown) => this.#ends.failed(entry, error),
        )
        return
      }
      this.#invoke(entry, def, run)
    } catch (error) {
      this.#ends.failed(entry, error)
    }
  }

  /** The handler of `entry` is done, or never ran: its slot goes to the next run waiting for one. */
  freeSlot(entry: InFlight): void {
    if (!entry.slot) return
    entry.slot = false
    this.#slots.free()
  }

  /**
   * Writes no more outcomes, then aborts the attempts of `inFlight` (in
   * that order: an attempt the abort ends records nothing), lets no
   * waiting handler start, and clears the attempts' timeouts.
   */
  close(inFlight: Iterable<InFlight>): void {
    this.#outcomes.close()
    for (const entry of inFlight) entry.handle?.abort('The task runtime closed during this attempt')
    this.#slots.close()
    this.#timeouts.clear()
  }

  /** Calls the handler of `def` for `run` once a slot of `maxConcurrentRuns` is free. */
  #invoke(entry: InFlight, def: TaskDefinition, run: RunRecord): void {
    if (entry.stopped) {
      this.#ends.release(entry)
      return
    }
    this.#slots.take(run.priority ?? 0, () => {
      entry.slot = true
      this.#invokeNow(entry, def, run)
    })
  }

  /** Calls the handler of `def` for `run`, in an execution span with telemetry. */
  #invokeNow(entry: InFlight, def: TaskDefinition, run: RunRecord): void {
    try {
      // Cancelled, or taken over, while it waited for its slot.
      if (entry.stopped) {
        this.#ends.release(entry)
        return
      }
      // A call that ended at once has been through `#attemptEnded` already.
      const attempts = run.attempts.length
      const span = this.#telemetry?.execution(run, attempts + 1, attempts === 0 && !hasSteps(run))
      if (span === undefined) {
        entry.handle = invoke(def, run, this.#invoker, entry)
        return
      }
      entry.span = span
      entry.handle = span.run(() => invoke(def, run, this.#invoker, entry))
    } catch (error) {
      this.#ends.failed(entry, error)
    }
  }

  /** The attempt is over: records how it ended. */
  #attemptEnded(entry: InFlight, outcome: InvocationOutcome): void {
    // From here, a waiter must look at the store.
    entry.handle = undefined
    this.freeSlot(entry)
    if (entry.span !== undefined) {
      entry.span.end(executionEnd(entry, outcome))
      entry.span = undefined
    }
    // Cancelled or taken over meanwhile: the run is not this attempt's to change.
    if (entry.stopped) {
      this.#ends.release(entry)
      return
    }
    if (outcome.kind === 'interrupted') {
      this.#ends.interrupted(entry, outcome.error)
      return
    }
    try {
      entry.writing = true
      if (outcome.kind === 'completed') {
        const { attempt, result } = outcome
        // Bound methods rather than closures: with many runs dispatched at
        // once, every run whose end is being written holds one.
        this.#outcomes
          .finishRun(entry, { status: 'completed', ok: true, result, attempt })
          .then(this.#endWritten.bind(this, entry), this.#failed.bind(this, entry))
      } else {
        this.#outcomes.recordFailedOrSuspended(entry, outcome).then(
          () => this.#ends.release(entry),
          (error: unknown) => this.#ends.failed(entry, error),
        )
      }
    } catch (error) {
      this.#ends.failed(entry, error)
    }
  }

  #failed(entry: InFlight, error: unknown): void {
    this.#ends.failed(entry, error)
  }

  /** The run's end is written (or it was no longer running): what follows it, then the dispatch is over. */
  #endWritten(entry: InFlight, done: RunRecord | undefined, error?: string): void {
    entry.writing = false
    try {
      this.#outcomes.announceEnd(entry, done, error)
    } catch (thrown) {
      this.#ends.failed(entry, thrown)
      return
    }
    this.#ends.release(entry)
  }
}

/** How an execution ended, as its span records it. */
function executionEnd(entry: InFlight, outcome: InvocationOutcome): ExecutionEnd {
  if (entry.stopped) return { kind: 'stopped', why: 'the run was cancelled, or its lease lost' }
  if (outcome.kind === 'interrupted') return { kind: 'stopped', why: `the run store could not serve it: ${outcome.error}` }
  if (outcome.kind === 'suspended') return { kind: 'suspended', stepKey: outcome.signal.stepKey, waitpoint: outcome.signal.waitpoint }
  return outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: 'completed' }
}
