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
  /** The runs whose `ctx.step.waitForEvent` this send met and resumed. */
  resumed: string[]
}
