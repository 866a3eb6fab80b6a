/**
 * The events `MemoryRunStore` holds (`RunStore.putEvent`, `eventsSince`):
 * in the order they were recorded, by id and by name, for
 * `EVENT_RETENTION_MS` and at most `maxEvents`, the oldest removed first.
 * Edge-safe.
 */
import { jsonCopy } from './json-copy.ts'
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from './store.ts'

export class MemoryEventLog {
  readonly #max: number
  /** Every held event by id, oldest first (a Map keeps insertion order). */
  readonly #byId = new Map<string, EventRecord>()
  /** The held events of each name, oldest first. */
  readonly #byName = new Map<string, EventRecord[]>()

  constructor(maxEvents: number) {
    this.#max = maxEvents
  }

  get size(): number {
    return this.#byId.size
  }

  put(event: EventRecord): { event: EventRecord; created: boolean } {
    this.#prune(Date.now() - EVENT_RETENTION_MS)
    const held = this.#byId.get(event.id)
    if (held) return { event: jsonCopy(held), created: false }
    const stored = jsonCopy(event)
    this.#byId.set(stored.id, stored)
    const named = this.#byName.get(stored.name)
    if (named) named.push(stored)
    else this.#byName.set(stored.name, [stored])
    if (this.#byId.size > this.#max) this.#removeOldest()
    return { event: jsonCopy(stored), created: true }
  }

  since(name: string, since: string, limit: number): EventRecord[] {
    const named = this.#byName.get(name) ?? []
    const from = Date.parse(since)
    const found: EventRecord[] = []
    for (const event of named) {
      if (found.length >= limit) break
      if (Date.parse(event.time) >= from) found.push(jsonCopy(event))
    }
    return found
  }

  /** Removes up to a batch of the events held past their retention, oldest first. */
  #prune(cutoff: number): void {
    for (let i = 0; i < EVENT_PRUNE_BATCH; i++) {
      const oldest = this.#byId.values().next().value
      if (!oldest || Date.parse(oldest.time) >= cutoff) return
      this.#removeOldest()
    }
  }

  #removeOldest(): void {
    const oldest = this.#byId.values().next().value
    if (!oldest) return
    this.#byId.delete(oldest.id)
    const named = this.#byName.get(oldest.name)!
    // The oldest of all is the oldest of its name.
    named.shift()
    if (named.length === 0) this.#byName.delete(oldest.name)
  }
}
