/**
 * The callers of `waitForRun()` in this process, woken when their run
 * completes, fails or is cancelled (a CLI runs a task to its end this
 * way). They wait for a run's end; what a run itself waits for is
 * `waitpoints.ts`.
 */
import type { RunRecord } from '../../types.ts'
import type { RunStore } from '../store/store.ts'
import { isFinished } from '../store/store.ts'

/**
 * A waiter is the resolve function of the promise it was handed, and
 * nothing else: rejecting it resolves it with a rejected promise. Most runs
 * have one waiter, kept as it is; a run with more keeps an array.
 */
type Resolve = (run: RunRecord | PromiseLike<RunRecord>) => void

export class RunWaiters {
  readonly #store: RunStore
  #waiters = new Map<string, Resolve | Resolve[]>()
  #closed: Error | undefined

  constructor(store: RunStore) {
    this.#store = store
  }

  /**
   * Resolves once the run is completed, failed or cancelled; rejects for an unknown run
   * or after `rejectAll`. `live`: the caller knows the run is live and that
   * its end will be settled here (its attempt is in flight in this
   * process), so the store need not be asked; a read would copy the run,
   * all its steps included.
   */
  wait(id: string, live = false): Promise<RunRecord> {
    if (live && this.#closed === undefined) return this.#register(id)
    // Most waits that are not live are for a run that has already finished
    // (a caller that triggers many runs and then waits for each): one read
    // answers those, and nothing is registered for them. A bound method
    // rather than a closure: it takes less, and every such wait holds it
    // until its read is answered.
    return this.#store.getRun(id).then(this.#read.bind(this, id))
  }

  /** The first read of a wait that is not live. */
  #read(id: string, run: RunRecord | undefined): RunRecord | Promise<RunRecord> {
    if (run && isFinished(run.status)) return run
    if (this.#closed) throw this.#closed
    if (!run) throw unknownRun(id)
    return this.#registerAndLook(id)
  }

  /** A waiter for a run that has not finished. */
  #register(id: string): Promise<RunRecord> {
    return new Promise((resolve) => this.#add(id, resolve))
  }

  /**
   * Registers, then looks again: a run that finished after the first read
   * and before this registration is caught by the second read, and one
   * that finishes after it is settled here.
   */
  #registerAndLook(id: string): Promise<RunRecord> {
    let resolve!: Resolve
    const promise = new Promise<RunRecord>((settle) => {
      resolve = settle
      this.#add(id, settle)
    })
    this.#store.getRun(id).then(
      (run) => {
        if (run && !isFinished(run.status)) return
        this.#drop(id, resolve)
        resolve(run ?? rejection(unknownRun(id)))
      },
      (error: Error) => {
        this.#drop(id, resolve)
        resolve(rejection(error))
      },
    )
    return promise
  }

  #add(id: string, resolve: Resolve): void {
    const list = this.#waiters.get(id)
    if (list === undefined) this.#waiters.set(id, resolve)
    else if (typeof list === 'function') this.#waiters.set(id, [list, resolve])
    else list.push(resolve)
  }

  /** Wakes the waiters of a finished run. */
  settle(run: RunRecord): void {
    const list = this.#waiters.get(run.id)
    if (list === undefined) return
    this.#waiters.delete(run.id)
    if (typeof list === 'function') list(run)
    else for (const resolve of list) resolve(run)
  }

  /**
   * Wakes the waiters of runs that finished elsewhere: on a store that
   * several processes share, another process may have finished the run.
   */
  async refresh(): Promise<void> {
    for (const id of [...this.#waiters.keys()]) {
      const run = await this.#store.getRun(id)
      if (run && isFinished(run.status)) this.settle(run)
    }
  }

  /** Rejects every pending waiter, and every later wait for an unfinished run. */
  rejectAll(error: Error): void {
    this.#closed = error
    const rejected = rejection(error)
    for (const list of this.#waiters.values()) {
      if (typeof list === 'function') list(rejected)
      else for (const resolve of list) resolve(rejected)
    }
    this.#waiters.clear()
  }

  #drop(id: string, resolve: Resolve): void {
    const list = this.#waiters.get(id)
    if (list === resolve) this.#waiters.delete(id)
    if (list === undefined || typeof list === 'function') return
    const i = list.indexOf(resolve)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) this.#waiters.delete(id)
  }
}

function unknownRun(id: string): Error {
  return new Error(`Unknown run "${id}"; it never existed or was evicted from the run store`)
}

/** A promise rejected with `error` that counts as handled: the waiters it resolves reject with it. */
function rejection(error: Error): Promise<never> {
  const rejected = Promise.reject(error)
  rejected.catch(() => {})
  return rejected
}
