/** Events: what `sendEvent` takes and answers (docs/events.md). */
import type { RunStatus } from './runs.ts'

/** One event to send. */
export interface EventInput {
  /** Letters, digits, '.', '-', '_' and '/', 1 to 128 characters, such as `order.paid`. */
  name: string
  /** JSON data: the input of every run the event starts, under the same rules as a task's input. */
  data?: unknown
  /**
   * The event's id. Sending an id again is sending the same event: the
   * runs it started are the answer, and none starts twice.
   * @default a random UUID
   */
  id?: string
}

/** Options of `sendEvent`. */
export interface SendEventOptions {
  /** See `EventInput.id`. */
  id?: string
}

/** A run an event started. */
export interface EventRun {
  taskName: string
  /** The run's id. */
  id: string
  status: RunStatus
}

/** What one sent event did. */
export interface SentEvent {
  id: string
  name: string
  /** One run per task whose `on` names the event, in the order the tasks were registered. */
  runs: EventRun[]
  /**
   * The runs whose `ctx.step.waitForEvent` this send met: resumed by it, or
   * by the wait's own look when the run was still suspending.
   */
  resumed: string[]
}

/** What `TaskRuntime.listEvents` lists. */
export interface ListEventsQuery {
  /** Only events of this name. */
  name?: string
  /**
   * Most events on the page, from 1 to 200.
   * @default 50
   */
  limit?: number
  /** The `cursor` of the page before. */
  cursor?: string
}

/** One event as `TaskRuntime.listEvents` and `GET /__events` list it. */
export interface ListedEvent {
  id: string
  name: string
  /** Absent when the event was sent without data. */
  data?: unknown
  /** When it was first sent (ISO). */
  time: string
  /** The runs it started that the store still holds, with their status now. */
  runs: EventRun[]
  /** The runs whose `ctx.step.waitForEvent` it met. */
  resumed: string[]
}

/** A page of events, newest first; `cursor` is set when more follow. */
export interface EventPage {
  events: ListedEvent[]
  cursor?: string
}
