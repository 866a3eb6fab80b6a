/**
 * The dispatch of one attempt: from a run that is `running` to the end of
 * what its attempt leaves behind. Each run with a dispatch in flight has an
 * `InFlight` entry here, and the dispatch is a chain of callbacks on it:
 *
 * 1. `start`: the entry is made; on a store several processes share, the
 *    attempt first takes the run's lease (another process may hold it).
 * 2. `callHandler`: the handler is called (`handler-call.ts`), under the
 *    attempt's timeout.
 * 3. `attemptEnded`: the outcome is written (`attempt-outcome.ts`): a
 *    result completes the run, a failure arms a retry or fails the run, an
 *    unmet wait suspends it and arms its waitpoint; `endWritten` then
 *    announces a run's end.
 * 4. `releaseDispatch`: the lease goes back, then `removeEntry` drops the
 *    entry and dispatches the run again if something asked meanwhile.
 *
 * A chain, not an async method: every run in flight would hold that
 * method's frame, and the promises it awaits.
 *
 * On a store several processes share, an attempt that had to take the
 * lease runs from the run as read once the lease is held, not from the
 * copy it was dispatched with: another process may have run an attempt of
 * it in between, whose steps and failure the copy would not show.
 *
 * An attempt that the store could not serve (`StoreUnavailableError` from
 * one of its steps: handler-call.ts, `interrupted`) records nothing: the
 * run stays `running`, and it is dispatched again once the store can be
 * read, as the same attempt (redispatch.ts). An attempt whose outcome could not
 * be written is tried until it is (outcome-writes.ts).
 *
 * An attempt whose run is cancelled, or whose lease is lost, is stopped: it
 * is aborted, and records nothing of how it ends. A lease is lost when a
 * renewal (`shared-work.ts`) finds it gone, or, on a store that fences the
 * runs it holds (`store.fences`), when one of the attempt's writes rejects
 * with `LeaseLostError`; either way it is logged once.
 */
import type { Logger, RunRecord } from '../types.ts'
import { LeaseLostError, RunCancelledError, errorMessage } from '../errors.ts'
import { OutcomeRecorder, type OutcomeRecorderOptions } from './attempt-outcome.ts'
import { AttemptTimeouts } from './attempt-timeouts.ts'
import type { TaskDefinition } from './definitions.ts'
import { invoke, type InvocationOutcome, type Invoker } from './handler-call.ts'
import { InFlight } from './in-flight.ts'
import { Redispatch } from './redispatch.ts'
import type { StepHost } from './steps.ts'
import { hasSteps, type RunStore, type SharedWork } from './store.ts'
import type { ExecutionEnd, Telemetry } from '../telemetry/types.ts'
import type { RunVersions } from './versions.ts'
import { DEFAULT_MAX_CONCURRENT_RUNS, HandlerSlots } from './handler-slots.ts'

export interface DispatcherOptions extends OutcomeRecorderOptions {
  /** What the steps of every attempt reach. */
  host: StepHost
  /** On a store several processes share: how they split the work, and this engine's id there. */
  shared: SharedWork | undefined
  owner: string
  /** Where each execution's span goes. */
  telemetry?: Telemetry | undefined
  /** Whether a run's version is this process's to run (versions.ts). */
  versions: RunVersions
  /** Most handlers running at once (handler-slots.ts). @default DEFAULT_MAX_CONCURRENT_RUNS */
  maxConcurrentRuns?: number
}

export class Dispatcher {
  readonly #store: RunStore
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  /** What each attempt's outcome writes. */
  readonly #outcomes: OutcomeRecorder
  readonly #shared: SharedWork | undefined
  readonly #owner: string
  readonly #telemetry: Telemetry | undefined
  readonly #versions: RunVersions
  /** Runs with a dispatch in flight, by id. */
  readonly #inFlight = new Map<string, InFlight>()
  readonly #timeouts = new AttemptTimeouts()
  /** What every attempt started here shares, its timeouts among them. */
  readonly #invoker: Invoker<InFlight>
  /** Interrupted runs, to dispatch again once the store can read them. */
  readonly #redispatch: Redispatch
  /** The cap on handlers running at once, and the runs that wait for one. */
  readonly #slots: HandlerSlots
  /** At `close()`: the runs whose outcome was being written, whose leases stay to lapse. */
  #kept: string[] = []
  #closed = false

  constructor(options: DispatcherOptions) {
    this.#store = options.store
    this.#tasks = options.tasks
    this.#logger = options.logger
    this.#outcomes = new OutcomeRecorder(options)
    this.#shared = options.shared
    this.#owner = options.owner
    this.#telemetry = options.telemetry
    this.#versions = options.versions
    this.#slots = new HandlerSlots(options.maxConcurrentRuns ?? DEFAULT_MAX_CONCURRENT_RUNS)
    this.#redispatch = new Redispatch({
      store: options.store,
      logger: options.logger,
      unref: options.unrefTimers,
      busy: (runId) => this.#inFlight.has(runId),
      start: (run) => this.start(run),
    })
    this.#invoker = {
      host: options.host,
      timeouts: this.#timeouts,
      ended: (entry, outcome) => this.#attemptEnded(entry, outcome),
    }
  }

  /** How many runs have a dispatch in flight here. */
  get size(): number {
    return this.#inFlight.size
  }

  has(runId: string): boolean {
    return this.#inFlight.has(runId)
  }

  /**
   * Whether the end of run `runId` will be settled here, so that a
   * `waitForRun` caller need not read the store. So it will while its
   * attempt runs here: whatever that attempt ends with, or a cancel, which
   * stops it. So will it while the attempt's end is being written, which a
   * store read could see before the write has committed (SQLite's batch): a
   * waiter answered from that read would learn of an end a crash can still
   * undo. On a shared store an entry waiting for its lease may be another
   * process's run, so only its running attempt counts there.
   */
  endsHere(runId: string): boolean {
    const entry = this.#inFlight.get(runId)
    return entry !== undefined && !entry.stopped && !entry.ended && (entry.handle !== undefined || !this.#shared)
  }

  /** The runs whose attempts here run under this engine's lease, to renew. */
  leasedRunIds(): string[] {
    return [...this.#inFlight.entries()].filter(([, entry]) => entry.leased && !entry.stopped).map(([id]) => id)
  }

  /**
   * Starts a dispatch of a running run. If one is in flight already (a
   * waitpoint met while the run was still suspending, say), the run is
   * dispatched again as soon as that one ends. `leased`: this engine already
   * holds the run's lease (it claimed an orphaned attempt, or the store
   * leased it the run as it inserted it: `SharedWork.leasesOnCreate`).
   */
  start(run: RunRecord, leased = false): void {
    if (this.#closed) return
    const current = this.#inFlight.get(run.id)
    if (current) {
      current.again = true
      return
    }
    const entry = new InFlight(run, leased)
    this.#inFlight.set(run.id, entry)
    // Another live process may hold the run: then the attempt is theirs.
    if (!this.#shared || leased) {
      this.#callHandler(entry, run)
      return
    }
    this.#shared
      .acquireLease(this.#owner, run.id)
      .then((held) => {
        entry.leased = held
        if (!held) return this.#releaseDispatch(entry)
        // Read under the lease: the copy this dispatch was given may be
        // older than another process's attempt of the run.
        return this.#store.getRun(run.id).then((latest) => {
          if (latest?.status === 'running') this.#callHandler(entry, latest)
          else this.#releaseDispatch(entry)
        })
      })
      .catch((error: unknown) => this.#dispatchFailed(entry, error))
  }

  /**
   * The leases to keep when this engine hands its runs over on closing:
   * those of attempts whose outcome was still being written, which stay
   * until they lapse, so that the run is taken over as it is then.
   */
  keptLeases(): string[] {
    return this.#kept
  }

  /**
   * The run was cancelled: its attempt here, if any, is aborted with
   * `RunCancelledError`. The handler may ignore its signal and carry on:
   * from here on its steps throw, and nothing of this attempt is recorded.
   */
  cancelAttempt(run: RunRecord): void {
    const entry = this.#inFlight.get(run.id)
    if (!entry) return
    entry.stopped = true
    entry.handle?.abort(new RunCancelledError(run.id, `Run "${run.id}" of task "${run.taskName}" was cancelled`), 'was cancelled')
  }

  /**
   * The attempt of run `runId` here lost its lease: a renewal, or one of
   * its writes (`LeaseLostError`), found that this process stalled past
   * `leaseMs` and another took the run over, or that the run was
   * cancelled. Logged once; the attempt is aborted and records nothing:
   * the run is another process's now, or over.
   */
  abortLostLease(runId: string): void {
    const entry = this.#inFlight.get(runId)
    if (!entry || entry.stopped) return
    this.#logger.warn(
      `[svc] task runtime: lost the lease on run ${runId} (this process stalled long enough for another to take the run over, or the run was cancelled); its attempt here is aborted and records nothing`,
    )
    entry.stopped = true
    entry.handle?.abort(
      `The lease on run ${runId} was lost (the run was cancelled, or this process stalled long enough for another to take it over)`,
      'lost its lease',
    )
  }

  /** Resolves once every dispatch in flight now is over, or after `ms`, whichever comes first. */
  async allOver(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const lapse = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms)
    })
    await Promise.race([Promise.allSettled([...this.#inFlight.values()].map((entry) => entry.done())), lapse])
    clearTimeout(timer)
  }

  /** Starts nothing more, aborts the attempts in flight and clears their timeouts. */
  close(): void {
    this.#closed = true
    this.#kept = [...this.#inFlight.values()].filter((entry) => entry.writing && entry.leased).map((entry) => entry.id)
    this.#outcomes.close()
    for (const entry of this.#inFlight.values()) entry.handle?.abort('The task runtime closed during this attempt')
    this.#slots.close()
    this.#timeouts.clear()
    this.#redispatch.close()
  }

  #callHandler(entry: InFlight, run: RunRecord): void {
    try {
      if (entry.stopped) {
        this.#releaseDispatch(entry)
        return
      }
      const def = this.#tasks.get(run.taskName)
      if (!def) {
        const missing = `Task "${run.taskName}" is not registered in this runtime`
        this.#outcomes.finishRun(entry, { status: 'failed', ok: false }).then(
          (done) => this.#endWritten(entry, done, missing),
          (error: unknown) => this.#dispatchFailed(entry, error),
        )
        return
      }
      if (!this.#versions.matches(run)) {
        // Another version's run: handed to a process of it, moved to this one, or failed (versions.ts).
        this.#versions.check(run).then(
          (checked) => {
            if (checked.kind === 'run') this.#invoke(entry, def, checked.run)
            else if (checked.kind === 'hand-over') this.#handOver(entry)
            else if (checked.kind === 'done') this.#endWritten(entry, undefined)
            else {
              const attempt = { index: run.attempts.length + 1, startedAt: new Date().toISOString(), durationMs: 0, error: checked.error }
              this.#outcomes.finishRun(entry, { status: 'failed', ok: false, attempt }).then(
                (done) => this.#endWritten(entry, done, checked.error),
                (error: unknown) => this.#dispatchFailed(entry, error),
              )
            }
          },
          (error: unknown) => this.#dispatchFailed(entry, error),
        )
        return
      }
      this.#invoke(entry, def, run)
    } catch (error) {
      this.#dispatchFailed(entry, error)
    }
  }

  /** Calls the handler of `def` for `run` once a slot of `maxConcurrentRuns` is free. */
  #invoke(entry: InFlight, def: TaskDefinition, run: RunRecord): void {
    if (entry.stopped) {
      this.#releaseDispatch(entry)
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
        this.#releaseDispatch(entry)
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
      this.#dispatchFailed(entry, error)
    }
  }

  /** The attempt is over: records how it ended. */
  #attemptEnded(entry: InFlight, outcome: InvocationOutcome): void {
    // From here, a waiter must look at the store.
    entry.handle = undefined
    this.#freeSlot(entry)
    if (entry.span !== undefined) {
      entry.span.end(executionEnd(entry, outcome))
      entry.span = undefined
    }
    // Cancelled or taken over meanwhile: the run is not this attempt's to change.
    if (entry.stopped) {
      this.#releaseDispatch(entry)
      return
    }
    if (outcome.kind === 'interrupted') {
      this.#interrupted(entry, outcome.error)
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
          .then(this.#endWritten.bind(this, entry), this.#dispatchFailed.bind(this, entry))
      } else {
        this.#outcomes.recordFailedOrSuspended(entry, outcome).then(
          () => this.#releaseDispatch(entry),
          (error: unknown) => this.#dispatchFailed(entry, error),
        )
      }
    } catch (error) {
      this.#dispatchFailed(entry, error)
    }
  }

  /** The run's end is written (or it was no longer running): what follows it, then the dispatch is over. */
  #endWritten(entry: InFlight, done: RunRecord | undefined, error?: string): void {
    entry.writing = false
    try {
      this.#outcomes.announceEnd(entry, done, error)
    } catch (thrown) {
      this.#dispatchFailed(entry, thrown)
      return
    }
    this.#releaseDispatch(entry)
  }

  /** A step of the dispatch threw or rejected: logged, and the dispatch is over. */
  #dispatchFailed(entry: InFlight, error: unknown): void {
    // The attempt's end (or its retry, or its wait) found the run another
    // process's: a lost lease, not a failure to process the run.
    if (error instanceof LeaseLostError) this.abortLostLease(entry.id)
    else this.#logger.error(`[svc] task "${entry.taskName}": run ${entry.id} could not be processed: ${errorMessage(error)}`)
    this.#releaseDispatch(entry)
  }

  /**
   * Leaves a run of another version to a live process of that version: its
   * lease goes (the run is anyone's at once, and only that version's
   * processes claim it), then they are woken to look.
   */
  #handOver(entry: InFlight): void {
    const shared = this.#shared!
    entry.leased = false
    shared
      .releaseLeases(this.#owner, [entry.id])
      .then(() => shared.wake())
      .catch((error: unknown) =>
        this.#logger.error(`[svc] task "${entry.taskName}": could not hand run ${entry.id} over to its version: ${errorMessage(error)}`),
      )
      .then(() => this.#removeEntry(entry))
  }

  /**
   * Ends a dispatch: gives its lease up, then removes its entry. The lease
   * of an attempt whose outcome was still being written when the engine
   * closed stays, to lapse (`keptLeases`).
   */
  #releaseDispatch(entry: InFlight): void {
    const kept = entry.writing && this.#closed
    entry.writing = false
    if (!entry.leased || kept) {
      this.#removeEntry(entry)
      return
    }
    this.#shared!.releaseLeases(this.#owner, [entry.id])
      .catch((error: unknown) =>
        this.#logger.error(`[svc] task "${entry.taskName}": could not release the lease on run ${entry.id}: ${errorMessage(error)}`),
      )
      .then(() => this.#removeEntry(entry))
  }

  /**
   * The store could not serve the attempt: nothing of it is recorded, its
   * lease goes back (should the store take that), and the run is
   * dispatched again once it can be read (redispatch.ts). On a shared store
   * another process may take it over first; then this one finds it held.
   */
  #interrupted(entry: InFlight, error: string): void {
    this.#logger.warn(
      `[svc] task "${entry.taskName}": run ${entry.id}: the run store could not serve the attempt (${error}); it runs again once the store can be used, and does not count as a retry`,
    )
    this.#releaseDispatch(entry)
    this.#redispatch.later(entry.id, entry.taskName)
  }

  /** The handler of `entry` is done, or never ran: its slot goes to the next run waiting for one. */
  #freeSlot(entry: InFlight): void {
    if (!entry.slot) return
    entry.slot = false
    this.#slots.free()
  }

  /** Removes the run's entry, and dispatches the run again if something asked for it meanwhile. */
  #removeEntry(entry: InFlight): void {
    this.#freeSlot(entry)
    this.#inFlight.delete(entry.id)
    if (!entry.again) {
      entry.finish()
      return
    }
    this.#store
      .getRun(entry.id)
      .then(
        (latest) => {
          if (latest?.status === 'running') this.start(latest)
        },
        (error: unknown) =>
          this.#logger.error(`[svc] task "${entry.taskName}": run ${entry.id} could not be dispatched again: ${errorMessage(error)}`),
      )
      .finally(() => entry.finish())
  }
}

/** How an execution ended, as its span records it. */
function executionEnd(entry: InFlight, outcome: InvocationOutcome): ExecutionEnd {
  if (entry.stopped) return { kind: 'stopped', why: 'the run was cancelled, or its lease lost' }
  if (outcome.kind === 'interrupted') return { kind: 'stopped', why: `the run store could not serve it: ${outcome.error}` }
  if (outcome.kind === 'suspended') return { kind: 'suspended', stepKey: outcome.signal.stepKey, waitpoint: outcome.signal.waitpoint }
  return outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: 'completed' }
}
