/**
 * Listing events over HTTP, under the task admin surface's auth (`auth.ts`),
 * beside sending them (`send-events.ts`):
 *
 * | Method | Path        | Query | Answer |
 * |--------|-------------|-------|--------|
 * | GET    | `/__events` | `name`, `limit` (1 to 200, default 50), `cursor` | 200 `{ events: [{ id, name, time, size, runs, resumed }], cursor? }` |
 * | GET    | `/__events/<id>` | | 200 `{ id, name, data?, time, size, runs, resumed }` (`get-event.ts`) |
 *
 * Newest first; `runs` are the runs each event started, with their task and
 * status now, and `resumed` the runs whose `ctx.step.waitForEvent` it met.
 * The list leaves each event's data out, giving its `size` in bytes of JSON
 * instead: a page of 50 large events would otherwise carry all of them, and
 * the dashboard reads the list on every run change.
 * A bad parameter is 400 `INVALID_QUERY` naming it; a store that keeps no
 * list of events is 501 `NOT_IMPLEMENTED` (docs/events.md).
 */
import type { RequestInfo, TaskRuntime } from '../types.ts'
import type { ListEventsQuery } from '../types/events.ts'
import type { EnvLike } from '../env.ts'
import type { Logger } from '../types/logger.ts'
import { internalError, knownErrorResponse, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { trimTrailingSlashes } from '../http/path.ts'
import { eventNameProblem } from '../events/rules.ts'
import { cursorPosition, DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT } from '../tasks/store/event-list.ts'
import { authorize, type LoopbackExemption } from './auth.ts'
import { checkParameters, InvalidQueryError, limitParameter, oneParameter } from './runs-query.ts'
import { summarizeEvent } from './event-summary.ts'
import { eventResponse } from './get-event.ts'
import { EVENTS_PREFIX, isEventsPath } from './send-events.ts'

const PARAMETERS = new Set(['name', 'limit', 'cursor'])

/**
 * Whether this handler answers `request`: a read of the list (`/__events`)
 * or of one event (`/__events/<id>`), and any other method but a send on
 * one event, so its 405 names the reads too. Sends are `send-events.ts`'s.
 */
export function isEventListing(request: Request, pathname: string): boolean {
  if (!isEventsPath(pathname)) return false
  const read = request.method === 'GET' || request.method === 'HEAD'
  return trimTrailingSlashes(pathname) === EVENTS_PREFIX ? read : request.method !== 'POST'
}

export interface ListEventsOptions {
  runtime: TaskRuntime
  env: EnvLike
  R: ResponseClass
  logger: Logger
  dev: boolean
  /** The development exemption of the auth, where the host reports peer addresses. */
  loopback?: LoopbackExemption
}

export function createListEventsHandler(options: ListEventsOptions) {
  const { runtime, env, R, logger, dev, loopback } = options

  async function list(params: URLSearchParams): Promise<Response> {
    // A store that keeps no list of events rejects with 501 NOT_IMPLEMENTED (event-list.ts).
    // The stores hand back each event's data, and the runtime's page keeps
    // it for code callers: its size is measured from it here.
    const page = await runtime.listEvents(parseEventsQuery(params))
    const events = page.events.map(summarizeEvent)
    const body = page.cursor === undefined ? { events } : { events, cursor: page.cursor }
    return new R(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } })
  }

  function route(request: Request, pathname: string): Promise<Response> | Response {
    const rest = trimTrailingSlashes(pathname.slice(EVENTS_PREFIX.length))
    if (rest === '') return list(new URL(request.url).searchParams)
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed(R, request.method, pathname, 'GET, HEAD, POST')
    return eventResponse(runtime, R, rest.slice(1), pathname)
  }

  return async (request: Request, pathname: string, info?: RequestInfo): Promise<Response> => {
    try {
      const denied = authorize(request, info, env, R, loopback)
      if (denied) return denied
      return await route(request, pathname)
    } catch (error) {
      const known = knownErrorResponse(R, error)
      if (known) return known
      logger.error(`[svc] ${request.method} ${pathname} failed:`, error)
      return internalError(R, error, dev)
    }
  }
}

/** The query the search parameters ask for; a bad one is `InvalidQueryError` naming it. */
export function parseEventsQuery(params: URLSearchParams): ListEventsQuery {
  checkParameters(params, PARAMETERS, `GET ${EVENTS_PREFIX} takes name, limit and cursor`)
  const query: ListEventsQuery = { limit: limitParameter(params, DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT) }
  const name = oneParameter(params, 'name', 'an event name')
  if (name !== undefined) {
    const problem = eventNameProblem(name)
    if (problem) throw new InvalidQueryError(`name: ${problem}`)
    query.name = name
  }
  const cursor = oneParameter(params, 'cursor', 'the cursor of the previous page')
  if (cursor !== undefined) {
    if (cursorPosition(cursor) === undefined) {
      throw new InvalidQueryError(`cursor must be the cursor of a page of events (got ${JSON.stringify(cursor)}); list again without one`)
    }
    query.cursor = cursor
  }
  return query
}
