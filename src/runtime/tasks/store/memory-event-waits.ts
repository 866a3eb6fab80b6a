/**
 * The runs of a `MemoryRunStore` (memory-store.ts) suspended on an event
 * (`ctx.step.waitForEvent`), by event name: what `listRuns({ waitingForEvent })`
 * reads, so a send costs the waits on its name and not a pass over every
 * retained run. Edge-safe.
 */
import type { StoredRun } from './memory-records.ts'

export class EventWaits {
  /** Run ids by the event name they wait for. */
  readonly #byName = new Map<string, Set<string>>()
  /** The name each waiting run waits for. */
  readonly #nameOf = new Map<string, string>()

  /** The ids of the runs waiting for event `name`, in no particular order. */
  of(name: string): ReadonlySet<string> {
    return this.#byName.get(name) ?? NONE
  }

  /** Keeps the index in step with `run`, after any change of its status or waitpoint. */
  track(run: StoredRun): void {
    const wait = run.status === 'suspended' ? run.suspended?.waitpoint : undefined
    const name = wait?.type === 'event' ? wait.name : undefined
    const was = this.#nameOf.get(run.id)
    if (was === name) return
    if (was !== undefined) this.forget(run.id)
    if (name === undefined) return
    this.#nameOf.set(run.id, name)
    const ids = this.#byName.get(name)
    if (ids === undefined) this.#byName.set(name, new Set([run.id]))
    else ids.add(run.id)
  }

  /** Drops run `id` from the index. */
  forget(id: string): void {
    const name = this.#nameOf.get(id)
    if (name === undefined) return
    this.#nameOf.delete(id)
    const ids = this.#byName.get(name)!
    ids.delete(id)
    if (ids.size === 0) this.#byName.delete(name)
  }
}

const NONE: ReadonlySet<string> = new Set()
