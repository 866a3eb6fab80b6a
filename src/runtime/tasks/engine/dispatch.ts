/**
 * The dispatch of one attempt: from a run that is `running` to the end of
 * what its attempt leaves behind. Each run with a dispatch in flight has an
 * `InFlight` entry here, and the dispatch is a chain of callbacks on it:
 *
 * 1. `start`: the entry is made; on a store several processes share, the
 *    attempt first takes the run's lease (another process may hold it).
 * 2. `AttemptCalls.call` (attempt-calls.ts): the handler is called
 *    (`handler-call.ts`) once a slot is free, under the attempt's timeout.
 * 3. `attemptEnded` there: the outcome is written (`attempt-outcome.ts`): a
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
import type { Logger, RunRecord } from '../../types.ts'
import { LeaseLostError, RunCancelledError, errorMessage } from '../../errors.ts'
import { AttemptCalls, type AttemptCallsOptions, type DispatchEnds } from './attempt-calls.ts'
import { InFlight } from './in-flight.ts'
import { Redispatch } from './redispatch.ts'
import type { RunStore, SharedWork } from '../store/store.ts'

export interface DispatcherOptions extends AttemptCallsOptions {
  /** On a store several processes share: how they split the work, and this engine's id there. */
  shared: SharedWork | undefined
  owner: string
}

export class Dispatcher {
  readonly #store: RunStore
  readonly #logger: Logger
  readonly #shared: SharedWork | undefined
  readonly #owner: string
  /** Runs with a dispatch in flight, by id. */
  readonly #inFlight = new Map<string, InFlight>()
  /** From a held lease to the write of the attempt's outcome (attempt-calls.ts). */
  readonly #attempts: AttemptCalls
  /** Interrupted runs, to dispatch again once the store can read them. */
  readonly #redispatch: Redispatch
  /** At `close()`: the runs whose outcome was being written, whose leases stay to lapse. */
  #kept: string[] = []
  #closed = false

  constructor(options: DispatcherOptions) {
    this.#store = options.store
    this.#logger = options.logger
    this.#shared = options.shared
    this.#owner = options.owner
    const ends: DispatchEnds = {
      release: (entry) => this.#releaseDispatch(entry),
      failed: (entry, error) => this.#dispatchFailed(entry, error),
      handOver: (entry) => this.#handOver(entry),
      interrupted: (entry, error) => this.#interrupted(entry, error),
    }
    this.#attempts = new AttemptCalls(options, ends)
    this.#redispatch = new Redispatch({
      store: options.store,
      logger: options.logger,
      unref: options.unrefTimers,
      busy: (runId) => this.#inFlight.has(runId),
      start: (run) => this.start(run),
    })
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
      this.#attempts.call(entry, run)
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
          if (latest?.status === 'running') this.#attempts.call(entry, latest)
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
   * Stops the attempt of run `runId` here, if one is in flight, for a
   * cancel that compensates (cancel-compensating.ts): it records nothing,
   * and the run is dispatched again once it ends, to run its undos.
   */
  stopForCompensation(runId: string): boolean {
    const entry = this.#inFlight.get(runId)
    if (!entry || entry.stopped) return false
    entry.stopped = true
    entry.again = true
    entry.handle?.abort(`Run "${runId}" of task "${entry.taskName}" was cancelled; its completed steps are being undone`, 'was cancelled')
    return true
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
    this.#attempts.close(this.#inFlight.values())
    this.#redispatch.close()
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

  /** Removes the run's entry, and dispatches the run again if something asked for it meanwhile. */
  #removeEntry(entry: InFlight): void {
    this.#attempts.freeSlot(entry)
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
