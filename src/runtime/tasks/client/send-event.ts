/**
 * `sendEvent` and `sendEvents`, exported from `svcjs`: in-process when a
 * task runtime is active in this process, otherwise `POST /__events` on
 * the task server (`SVC_TASK_URL`, with `SVC_TASK_SECRET`), as `enqueue()`
 * does (docs/events.md).
 */
import { getActiveTaskRuntime } from './active.ts'
import { sendEventsOverHttp } from './client.ts'
import { describe } from '../../describe.ts'
import type { EventInput, SendEventOptions, SentEvent } from '../../types/events.ts'
import type { EventDataArgs, EventNameArg, TypedEventInput } from '../../types/event-registry.ts'

/**
 * Sends event `name` with `data`: starts one run of every task whose `on`
 * names it, and resolves to `{ id, name, runs }`. An `id` sent before is
 * the same event: it starts nothing more and answers with the runs it
 * started. See `TaskRuntime.sendEvent`. With the app's event schemas
 * typed (`svc types`), a declared name takes data of its schema's type.
 */
export function sendEvent<N extends string>(name: EventNameArg<N>, ...args: EventDataArgs<N, SendEventOptions>): Promise<SentEvent>
export async function sendEvent(name: string, data?: unknown, options?: SendEventOptions): Promise<SentEvent> {
  const runtime = getActiveTaskRuntime()
  if (runtime) return runtime.sendEvent(name, data, options)
  const call = `sendEvent(${describe(name)})`
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new TypeError(`${call}: options must be an object such as { id } (got ${describe(options)})`)
  }
  const [sent] = await sendEventsOverHttp([{ name, data, ...(options?.id === undefined ? {} : { id: options.id }) }], call)
  return sent
}

/** Sends up to 100 events, each as `sendEvent` does; every event is checked before any is sent. */
export async function sendEvents(events: readonly TypedEventInput[]): Promise<SentEvent[]> {
  const runtime = getActiveTaskRuntime()
  if (runtime) return runtime.sendEvents(events as readonly EventInput[])
  return sendEventsOverHttp(events as readonly EventInput[], 'sendEvents()')
}
