/**
 * An event as `GET /__events` lists it: what it is and what it did, with
 * the size of its data in place of the data, so a page stays small however
 * large the events are. The data is one request away (`GET /__events/<id>`,
 * `get-event.ts`).
 */
import type { ListedEvent } from '../types/events.ts'
import { utf8Length } from '../tasks/base/json.ts'

/** One event of `GET /__events`. */
export interface EventSummary extends Omit<ListedEvent, 'data'> {
  /** Bytes of the UTF-8 JSON of its data; 0 when it was sent without data. */
  size: number
}

/** `event` without its data, and the size of that data. */
export function summarizeEvent(event: ListedEvent): EventSummary {
  const { id, name, data, time, runs, resumed } = event
  return { id, name, time, size: dataSize(data), runs, resumed }
}

/** Bytes of the UTF-8 JSON of `data`, 0 for none: a held event's data is JSON, as `sendEvent` checked it. */
export function dataSize(data: unknown): number {
  return data === undefined ? 0 : utf8Length(JSON.stringify(data))
}
