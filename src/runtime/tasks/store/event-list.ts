/**
 * Listing the events a store holds (docs/events.md "Listing events"): the
 * page rules every store follows (`RunStore.listEvents`), the cursor they
 * hand out, how what an event did is merged into it
 * (`RunStore.noteEventEffects`), and the page `TaskRuntime.listEvents`
 * answers, with the runs each event started read back. Edge-safe.
 *
 * A cursor is the position of the last event of a page in the order events
 * were recorded (a store's `seq`), written as a decimal: the next page is
 * the events recorded before it, so pruning the events it follows moves
 * nothing. Callers treat it as opaque.
 */
import { SvcError } from '../../errors.ts'
import { describe } from '../../describe.ts'
import { eventNameProblem } from '../../events/rules.ts'
import type { EventPage, EventRun, ListEventsQuery, ListedEvent } from '../../types/events.ts'
import type { EventEffects, EventListQuery, EventRecord, RunStore } from '../../types/run-store.ts'

/** Events on a page when the query sets no `limit`. */
export const DEFAULT_EVENTS_LIMIT = 50
/** The largest page `TaskRuntime.listEvents` and `GET /__events` hand out. */
export const MAX_EVENTS_LIMIT = 200

/** The cursor that lists the events recorded before the one at `seq`. */
export function eventCursor(seq: number | string): string {
  return String(seq)
}

/** The position `cursor` names, or `undefined` for text no listing handed out. */
export function cursorPosition(cursor: unknown): number | undefined {
  const seq = typeof cursor === 'string' && /^[1-9]\d{0,15}$/.test(cursor) ? Number(cursor) : undefined
  return seq !== undefined && Number.isSafeInteger(seq) ? seq : undefined
}

/**
 * A store's query, checked: `before` is the position its cursor names
 * (list the events recorded before it), absent for the first page.
 */
export function listingBounds(query: EventListQuery, where: string): { name?: string; limit: number; before?: number } {
  const { name, limit, cursor } = query
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`${where}: limit must be a whole number from 1 (got ${describe(limit)})`)
  if (name !== undefined && typeof name !== 'string') throw new TypeError(`${where}: name must be a string (got ${describe(name)})`)
  if (cursor === undefined) return { name, limit }
  const before = cursorPosition(cursor)
  if (before === undefined) throw new TypeError(`${where}: cursor must be the cursor of a page of events (got ${describe(cursor)})`)
  return { name, limit, before }
}

/**
 * Adds to `event` the ids of `effects` it does not hold yet, in their
 * order; returns whether anything was added.
 */
export function addEffects(event: EventRecord, effects: EventEffects): boolean {
  const runs = missing(event.runs, effects.runs)
  const resumed = missing(event.resumed, effects.resumed)
  if (runs.length > 0) event.runs = [...(event.runs ?? []), ...runs]
  if (resumed.length > 0) event.resumed = [...(event.resumed ?? []), ...resumed]
  return runs.length > 0 || resumed.length > 0
}

/** The ids of `added` not in `held`, each once, in their order. */
export function missing(held: readonly string[] | undefined, added: readonly string[] | undefined): string[] {
  const seen = new Set(held)
  return (added ?? []).filter((id) => !seen.has(id) && seen.add(id))
}

/**
 * `TaskRuntime.listEvents` on `store`: a page of its events, newest first,
 * each with the runs it started (task and status as they are now; a run
 * the store evicted since is left out) and the runs whose waits it met.
 */
export async function listEventPage(store: RunStore, query: ListEventsQuery = {}): Promise<EventPage> {
  const where = 'listEvents()'
  if (!store.listEvents) {
    throw new SvcError(
      `${where}: this runtime's run store keeps no list of events; the memory, SQLite, Postgres and Durable Object stores do`,
      'NOT_IMPLEMENTED',
      501,
    )
  }
  if (query === null || typeof query !== 'object') {
    throw new TypeError(`${where}: the query must be an object such as { name, limit, cursor } (got ${describe(query)})`)
  }
  const { name, limit = DEFAULT_EVENTS_LIMIT, cursor } = query
  if (name !== undefined) {
    const problem = eventNameProblem(name)
    if (problem) throw new TypeError(`${where}: ${problem}`)
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENTS_LIMIT) {
    throw new RangeError(`${where}: limit must be a whole number from 1 to ${MAX_EVENTS_LIMIT} (got ${describe(limit)})`)
  }
  const page = await store.listEvents({ limit, ...(name === undefined ? {} : { name }), ...(cursor === undefined ? {} : { cursor }) })
  const events = await Promise.all(page.events.map((event) => listed(store, event)))
  return page.cursor === undefined ? { events } : { events, cursor: page.cursor }
}

async function listed(store: RunStore, event: EventRecord): Promise<ListedEvent> {
  const runs = await eventRuns(store, event)
  const data = event.data === undefined ? {} : { data: event.data }
  return { id: event.id, name: event.name, ...data, time: event.time, runs, resumed: event.resumed ?? [] }
}

/** The runs `event` started, with their task and status as they are now; a run `store` evicted since is left out. */
export async function eventRuns(store: Pick<RunStore, 'getRun'>, event: EventRecord): Promise<EventRun[]> {
  const found = await Promise.all((event.runs ?? []).map((id) => store.getRun(id)))
  return found.flatMap((run) => (run ? [{ id: run.id, taskName: run.taskName, status: run.status }] : []))
}
