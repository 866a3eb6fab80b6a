/**
 * When a test runtime has done all it can without its clock moving: every
 * call to its store and every timer set counts as activity, and the engine
 * is settled once a few real turns of the event loop pass with none. The
 * memory store answers on promises, so an engine that can go on does so
 * within a turn; a handler that awaits real time or I/O does not, which is
 * why `t.mockStep` exists.
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

  /** Something happened. */
  note(): void {
    this.#count++
  }

  /** `store`, with each call it answers noted. */
  watch<S extends RunStore>(store: S): S {
    return new Proxy(store, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          this.note()
          return Reflect.apply(value, target, args)
        }
      },
    })
  }

  /**
   * Waits until `QUIET_TURNS` turns pass with no activity, or `limitMs` of
   * wall time, and says which: `false` when activity went on past it.
   */
  async settle(limitMs: number): Promise<boolean> {
    const deadline = realNow() + limitMs
    let seen = this.#count
    let quiet = 0
    while (quiet < QUIET_TURNS) {
      await new Promise<void>((resolve) => realTurn(resolve))
      if (this.#count === seen) quiet++
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
