/**
 * One event over HTTP, with its data: what the events listing leaves out
 * (`list-events.ts`), under the same auth.
 *
 * | Method | Path             | Answer |
 * |--------|------------------|--------|
 * | GET    | `/__events/<id>` | 200 `{ id, name, data?, time, size, runs, resumed }` |
 *
 * An id the store does not hold (never sent, or sent over a day ago) is 404
 * `EVENT_NOT_FOUND`. A '/' in an id arrives percent-encoded, as in a name
 * sent to `POST /__events/<name>`.
 */
import type { TaskRuntime } from '../types.ts'
import type { ListedEvent } from '../types/events.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { MAX_EVENTS_LIMIT } from '../tasks/store/event-list.ts'
import { eventIdProblem } from '../events/rules.ts'
import { dataSize } from './event-summary.ts'
import { EVENTS_PREFIX } from './send-events.ts'
import { decodeSegment } from '../http/path.ts'

/** The answer to `GET /__events/<segment>`: the event whose id `segment` encodes, or 404. */
export async function eventResponse(runtime: TaskRuntime, R: ResponseClass, segment: string, pathname: string): Promise<Response> {
  if (segment.includes('/')) {
    return jsonError(
      R,
      404,
      'NOT_FOUND',
      `No such path: ${pathname}. Read an event with GET ${EVENTS_PREFIX}/<id>, percent-encoding any '/' in the id`,
    )
  }
  const id = decodeSegment(segment)
  const event = eventIdProblem(id) === null ? await findEvent(runtime, id) : undefined
  if (!event) {
    return jsonError(
      R,
      404,
      'EVENT_NOT_FOUND',
      `No event ${JSON.stringify(id)} is held: it was never sent, or the store no longer holds it (events are held for a day); GET ${EVENTS_PREFIX} lists the events held`,
    )
  }
  return new R(JSON.stringify({ ...event, size: dataSize(event.data) }), { status: 200, headers: { 'content-type': 'application/json' } })
}

/**
 * The held event with `id`, read through the listing: `TaskRuntime` and the
 * stores read events by page, not by id, and the listing is what every
 * runtime answers the same way (a sharded one merges what each shard's runs
 * did). It walks the pages, newest first, until the id turns up.
 */
async function findEvent(runtime: TaskRuntime, id: string): Promise<ListedEvent | undefined> {
  let cursor: string | undefined
  do {
    const page = await runtime.listEvents(cursor === undefined ? { limit: MAX_EVENTS_LIMIT } : { limit: MAX_EVENTS_LIMIT, cursor })
    const found = page.events.find((event) => event.id === id)
    if (found) return found
    cursor = page.cursor
  } while (cursor !== undefined)
  return undefined
}
