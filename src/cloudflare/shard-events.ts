/**
 * Events over several tasks objects. Every shard records each event and
 * meets the `waitForEvent` waits it holds, whether they wait already or
 * start waiting later within their lookback; each task on the event starts
 * its run in one shard, the one its placement names (`ownsEventRun` in
 * `tasks-object.ts`). An event sent without an id gets one here, so that
 * every shard records the same event. Edge-safe.
 */
import type { EventInput, EventRun } from '../types.ts'

/** What one event did in one tasks object (`eventEffects`). */
export interface EventEffectsHere {
  id: string
  /** The runs it started here that the store still holds. */
  runs: EventRun[]
  resumed: string[]
}

/**
 * `events` with an id each. An event that is no object is passed on as it
 * is: every shard refuses it alike, and none sends anything.
 */
export function eventsWithIds(events: readonly unknown[]): EventInput[] {
  return events.map((sent) => {
    if (sent === null || typeof sent !== 'object' || Array.isArray(sent)) return sent as EventInput
    const event = sent as EventInput
    return event.id === undefined ? { ...event, id: crypto.randomUUID() } : event
  })
}
