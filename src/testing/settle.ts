/**
 * When a test runtime has done all it can without its clock moving: every
 * call to its store and every timer set counts as activity, and the engine
 * is settled once a few real turns of the event loop pass with none and no
 * store call pending. An engine that can go on does so within a turn of its
 * store's answer (the memory store's is a promise; SQLite's and Postgres's
 * come from their I/O); a handler that awaits real time or I/O of its own
 * does not, which is why `t.mockStep` exists.
 */
import type { RunStore } from '../runtime/tasks/store/store.ts'

// The real ones, taken before a test can fake them.
const realTurn: (fn: () => void) => void =
  typeof globalThis.setImmediate === 'function' ? globalThis.setImmediate.bind(globalThis) : (fn) => globalThis.setTimeout(fn, 0)
const realNow = Date.now.bind(Date)

/** Turns without activity that make the engine settled. */
const QUIET_TURNS = 3

export class Activity {
  #count = 0
  /** Calls the store has not answered yet. */
  #inflight = 0

  /** Something happened. */
  note(): void {
    this.#count++
  }

  /**
   * `store`, with each call it answers noted and its pending answers
   * counted; on a store several processes share, the calls of its shared
   * work (claims, leases) too.
   */
  watch<S extends RunStore>(store: S): S {
    const shared = store.shared && this.#watchCalls(store.shared)
    return this.#watchCalls(store, (prop) => (prop === 'shared' ? shared : undefined))
  }

  /** `target`, whose calls that answer with a promise (real I/O, such as signing a callback URL) are activity until they settle. */
  watchCalls<T extends object>(target: T): T {
    return this.#watchCalls(target)
  }

  #watchCalls<T extends object>(target: T, replace?: (prop: string | symbol) => unknown): T {
    const done = () => {
      this.#inflight--
      this.note()
    }
    return new Proxy(target, {
      get: (target, prop) => {
        const replaced = replace?.(prop)
        if (replaced !== undefined) return replaced
        const value = Reflect.get(target, prop, target)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          this.note()
          const result = Reflect.apply(value, target, args)
          if (result instanceof Promise) {
            this.#inflight++
            result.then(done, done)
          }
          return result
        }
      },
    })
  }

  /**
   * Waits until `QUIET_TURNS` turns pass with no activity and no store call
   * pending, or `limitMs` of wall time, and says which: `false` when
   * activity went on past it.
   */
  async settle(limitMs: number): Promise<boolean> {
    const deadline = realNow() + limitMs
    let seen = this.#count
    let quiet = 0
    while (quiet < QUIET_TURNS) {
      await new Promise<void>((resolve) => realTurn(resolve))
      if (this.#count === seen && this.#inflight === 0) quiet++
      else {
        seen = this.#count
        quiet = 0
      }
      if (realNow() > deadline) return false
    }
    return true
  }

  /** Waits `ms` of wall time, in turns, for work that awaits the real time. */
  async wait(ms: number): Promise<void> {
    const until = realNow() + ms
    while (realNow() < until) await new Promise<void>((resolve) => realTurn(resolve))
  }
}
