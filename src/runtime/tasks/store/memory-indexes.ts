/**
 * The indexes a `MemoryRunStore` (memory-store.ts) keeps of its runs beside
 * the runs themselves: each run's place in creation order (the store's map
 * keeps that order but cannot be indexed by it), and the suspended runs that
 * wait for an event (`ctx.step.waitForEvent`), by event name, which
 * `listRuns({ waitingForEvent })` reads, so a send costs the waits on its
 * name and not a pass over every retained run. Edge-safe.
 */
import type { StoredRun } from './memory-records.ts'

export class RunIndexes {
  /** Each retained run's place in creation order, by id. */
  readonly #order = new Map<string, number>()
  #made = 0
  /** Run ids by the event name they wait for. */
  readonly #byName = new Map<string, Set<string>>()
  /** The name each waiting run waits for. */
  readonly #nameOf = new Map<string, string>()

  /** A run was recorded. */
  added(run: StoredRun): void {
    this.#order.set(run.id, this.#made++)
    this.track(run)
  }

  /** Run `id` is no longer retained. */
  removed(id: string): void {
    this.#order.delete(id)
    this.#unwait(id)
  }

  /** Run `id`'s place in creation order, if it is retained. */
  order(id: string): number | undefined {
    return this.#order.get(id)
  }

  /** Keeps the index of waits in step with `run`, after any change of its status or waitpoint. */
  track(run: StoredRun): void {
    const wait = run.status === 'suspended' ? run.suspended?.waitpoint : undefined
    const name = wait?.type === 'event' ? wait.name : undefined
    const was = this.#nameOf.get(run.id)
    if (was === name) return
    if (was !== undefined) this.#unwait(run.id)
    if (name === undefined) return
    this.#nameOf.set(run.id, name)
    const ids = this.#byName.get(name)
    if (ids === undefined) this.#byName.set(name, new Set([run.id]))
    else ids.add(run.id)
  }

  /** The runs of `runs` waiting for event `name`, in creation order. */
  waitingFor(name: string, runs: ReadonlyMap<string, StoredRun>): StoredRun[] {
    const ids = this.#byName.get(name)
    if (ids === undefined) return []
    return [...ids].map((id) => runs.get(id)!).sort((a, b) => this.#order.get(a.id)! - this.#order.get(b.id)!)
  }

  #unwait(id: string): void {
    const name = this.#nameOf.get(id)
    if (name === undefined) return
    this.#nameOf.delete(id)
    const ids = this.#byName.get(name)!
    ids.delete(id)
    if (ids.size === 0) this.#byName.delete(name)
  }
}
