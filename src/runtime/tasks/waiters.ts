/**
 * In-process `waitForRun()` callers, woken when their run completes or
 * fails (a CLI runs a task to its end this way).
 */
import type { RunRecord } from '../types.ts'
import type { RunStore } from './store.ts'
import { isFinished } from './store.ts'

interface Waiter {
  resolve(run: RunRecord): void
  reject(error: Error): void
}

export class RunWaiters {
  #waiters = new Map<string, Waiter[]>()
  #closed: Error | undefined

  /**
   * Resolves once the run is completed or failed; rejects for an unknown run
   * or after `rejectAll`. `live`: the caller knows the run is live and that
   * its end will be settled here (its attempt is in flight in this
   * process), so the store need not be asked; a read would copy the run,
   * all its steps included.
   */
  wait(store: RunStore, id: string, live = false): Promise<RunRecord> {
    return new Promise((resolve, reject) => {
      if (this.#closed) {
        // Still answer for a run that has already finished.
        store.getRun(id).then((run) => (run && isFinished(run.status) ? resolve(run) : reject(this.#closed)), reject)
        return
      }
      // Register first, then look: a run that finishes in between is caught
      // by one of the two.
      const waiter: Waiter = { resolve, reject }
      const list = this.#waiters.get(id)
      if (list) list.push(waiter)
      else this.#waiters.set(id, [waiter])
      if (live) return
      store.getRun(id).then((run) => {
        if (run && !isFinished(run.status)) return
        this.#drop(id, waiter)
        if (run) resolve(run)
        else reject(new Error(`Unknown run "${id}"; it never existed or was evicted from the run store`))
      }, reject)
    })
  }

  /** Wakes the waiters of a finished run. */
  settle(run: RunRecord): void {
    const list = this.#waiters.get(run.id)
    if (!list) return
    this.#waiters.delete(run.id)
    for (const waiter of list) waiter.resolve(run)
  }

  /**
   * Wakes the waiters of runs that finished elsewhere: on a store that
   * several processes share, another process may have finished the run.
   */
  async refresh(store: RunStore): Promise<void> {
    for (const id of [...this.#waiters.keys()]) {
      const run = await store.getRun(id)
      if (run && isFinished(run.status)) this.settle(run)
    }
  }

  /** Rejects every pending waiter, and every later wait for an unfinished run. */
  rejectAll(error: Error): void {
    this.#closed = error
    for (const list of this.#waiters.values()) for (const waiter of list) waiter.reject(error)
    this.#waiters.clear()
  }

  #drop(id: string, waiter: Waiter): void {
    const list = this.#waiters.get(id)
    if (!list) return
    const i = list.indexOf(waiter)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) this.#waiters.delete(id)
  }
}
