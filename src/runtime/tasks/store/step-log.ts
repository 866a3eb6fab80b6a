/**
 * The steps of one run as the memory store keeps them. A run's `steps` must
 * reach every reader as an object of its own (changing it must not change
 * the store), and a run may hold thousands of steps.
 *
 * Up to `LARGE` steps, the log is one object and a read gets a copy of it:
 * V8 copies an object of that size in one block. Past it, V8 keeps objects
 * in dictionary mode (its limit is 1,020 named properties), where a copy
 * costs a pass over every key and, past a few thousand keys, a large-object
 * allocation. So a large log keeps its steps in a `Map`, and beside it at
 * most one object kept in step with it: the first read after a change takes
 * that object away, as the reader's own, without a copy; a later read with
 * no change in between builds a new one. A replay reads its run once to run
 * it and once when it finishes, so it builds one object rather than copying
 * two.
 */
import type { StepRecord } from '../../types.ts'
import { jsonCopy } from '../base/json-copy.ts'

/** Past this many steps a log keeps them in a `Map` (below V8's 1,020 fast properties). */
const LARGE = 1_000

export class StepLog {
  /** The steps, while the log is small. */
  #small: Record<string, StepRecord> | undefined = {}
  #size = 0
  /** The steps, once the log is large. */
  #large: Map<string, StepRecord> | undefined
  /** A large log's object with the same steps that nobody else holds, or none. */
  #spare: Record<string, StepRecord> | undefined

  /** A log of the steps of `steps`, or `undefined` when there are none; `steps` itself is not kept. */
  static from(steps: Readonly<Record<string, StepRecord>>): StepLog | undefined {
    let log: StepLog | undefined
    for (const key in steps) (log ??= new StepLog()).set(key, steps[key])
    return log
  }

  /**
   * Records (or overwrites) one step, as a frozen copy: every copy of the
   * run shares its step records. The output is copied too, so whoever
   * produced it cannot change the record by changing it.
   */
  set(key: string, given: StepRecord): void {
    const step = Object.freeze('output' in given ? { ...given, output: jsonCopy(given.output) } : { ...given })
    const small = this.#small
    if (small === undefined) {
      this.#large!.set(key, step)
      if (this.#spare !== undefined) this.#spare[key] = step
      return
    }
    if (!Object.hasOwn(small, key) && ++this.#size > LARGE) {
      this.#large = new Map(Object.entries(small))
      this.#large.set(key, step)
      this.#small = undefined
      small[key] = step
      this.#spare = small
      return
    }
    small[key] = step
  }

  /** The step recorded under `key`, if any. */
  get(key: string): StepRecord | undefined {
    const small = this.#small
    if (small === undefined) return this.#large!.get(key)
    return Object.hasOwn(small, key) ? small[key] : undefined
  }

  /** An object with every step, the caller's own. The step records in it are shared: they never change. */
  take(): Record<string, StepRecord> {
    if (this.#small !== undefined) return { ...this.#small }
    const spare = this.#spare
    if (spare !== undefined) {
      this.#spare = undefined
      return spare
    }
    const steps: Record<string, StepRecord> = {}
    for (const [key, step] of this.#large!) steps[key] = step
    return steps
  }
}
