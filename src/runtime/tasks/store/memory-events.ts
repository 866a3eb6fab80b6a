/**
 * The events `MemoryRunStore` holds (`RunStore.putEvent`, `eventsSince`,
 * `listEvents`, `noteEventEffects`): in the order they were recorded, by
 * id and by name, for `EVENT_RETENTION_MS` and at most `maxEvents`, the
 * oldest removed first. It counts the bytes of JSON they hold, which the
 * store's `maxBytes` bounds with its runs'. Edge-safe.
 */
import { jsonCopy } from '../base/json-copy.ts'
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from './store.ts'
import type { EventEffects, EventListQuery } from '../../types/run-store.ts'
import { addEffects, eventCursor, listingBounds } from './event-list.ts'
import { type EventMatch, matchesEvent } from '../../events/match.ts'
import { jsonLength } from '../base/json.ts'
import type { Clock } from '../base/clock.ts'

/** A held event and its place in the order events were recorded (the cursor of a listing). */
interface HeldEvent {
  seq: number
  event: EventRecord
  /** Its JSON's length, as `bytes` counts it. */
  size: number
}

export class MemoryEventLog {
  readonly #max: number
  /** What an event's age is reckoned from. */
  readonly #clock: Clock
  #seq = 0
  /** Every held event, oldest first. */
  readonly #all: HeldEvent[] = []
  readonly #byId = new Map<string, HeldEvent>()
  /** The held events of each name, oldest first. */
  readonly #byName = new Map<string, HeldEvent[]>()
  #bytes = 0

  constructor(maxEvents: number, clock: Clock) {
    this.#max = maxEvents
    this.#clock = clock
  }

  get size(): number {
    return this.#all.length
  }

  /** Whether an event of this id is held. */
  holds(id: string): boolean {
    return this.#byId.has(id)
  }

  /** The JSON the held events hold, in bytes. */
  get bytes(): number {
    return this.#bytes
  }

  /** The JSON `event` would hold once put, in bytes. */
  static sizeOf(event: EventRecord): number {
    return jsonLength(event)
  }

  put(event: EventRecord): { event: EventRecord; created: boolean } {
    this.#prune(this.#clock.now() - EVENT_RETENTION_MS)
    const held = this.#byId.get(event.id)
    if (held) return { event: jsonCopy(held.event), created: false }
    // What the event did is noted later (`noteEffects`), not taken from the caller.
    const { id, name, data, time } = event
    const copy = jsonCopy({ id, name, data, time })
    const stored: HeldEvent = { seq: ++this.#seq, event: copy, size: MemoryEventLog.sizeOf(copy) }
    this.#bytes += stored.size
    this.#all.push(stored)
    this.#byId.set(event.id, stored)
    const named = this.#byName.get(event.name)
    if (named) named.push(stored)
    else this.#byName.set(event.name, [stored])
    if (this.#all.length > this.#max) this.removeOldest()
    return { event: jsonCopy(stored.event), created: true }
  }

  since(name: string, since: string, limit: number, match?: EventMatch): EventRecord[] {
    const named = this.#byName.get(name) ?? []
    const from = Date.parse(since)
    const found: EventRecord[] = []
    for (const { event } of named) {
      if (found.length >= limit) break
      if (Date.parse(event.time) >= from && matchesEvent(match, event.data)) found.push(jsonCopy(event))
    }
    return found
  }

  list(query: EventListQuery): { events: EventRecord[]; cursor?: string } {
    const { name, limit, before } = listingBounds(query, 'MemoryRunStore.listEvents')
    const held = name === undefined ? this.#all : (this.#byName.get(name) ?? [])
    const events: EventRecord[] = []
    let i = before === undefined ? held.length - 1 : lastBefore(held, before)
    for (; i >= 0 && events.length < limit; i--) events.push(jsonCopy(held[i].event))
    return i >= 0 ? { events, cursor: eventCursor(held[i + 1].seq) } : { events }
  }

  noteEffects(id: string, effects: EventEffects): void {
    const held = this.#byId.get(id)
    if (!held || !addEffects(held.event, jsonCopy(effects))) return
    const size = MemoryEventLog.sizeOf(held.event)
    this.#bytes += size - held.size
    held.size = size
  }

  /** Removes up to a batch of the events held past their retention, oldest first. */
  #prune(cutoff: number): void {
    for (let i = 0; i < EVENT_PRUNE_BATCH; i++) {
      const oldest = this.#all[0]
      if (!oldest || Date.parse(oldest.event.time) >= cutoff) return
      this.removeOldest()
    }
  }

  /** Removes the oldest held event; false when none is held. */
  removeOldest(): boolean {
    const oldest = this.#all.shift()
    if (!oldest) return false
    this.#bytes -= oldest.size
    this.#byId.delete(oldest.event.id)
    const named = this.#byName.get(oldest.event.name)!
    // The oldest of all is the oldest of its name.
    named.shift()
    if (named.length === 0) this.#byName.delete(oldest.event.name)
    return true
  }
}

/** The index of the last of `held` (in `seq` order) recorded before `seq`, or -1. */
function lastBefore(held: readonly HeldEvent[], seq: number): number {
  let low = 0
  let high = held.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (held[mid].seq < seq) low = mid + 1
    else high = mid
  }
  return low - 1
}
