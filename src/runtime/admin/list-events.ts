/**
 * Listing events over HTTP, under the task admin surface's auth (`auth.ts`),
 * beside sending them (`send-events.ts`):
 *
 * | Method | Path        | Query | Answer |
 * |--------|-------------|-------|--------|
 * | GET    | `/__events` | `name`, `limit` (1 to 200, default 50), `cursor` | 200 `{ events: [{ id, name, data?, time, runs, resumed }], cursor? }` |
 *
 * Newest first; `runs` are the runs each event started, with their task and
 * status now, and `resumed` the runs whose `ctx.step.waitForEvent` it met.
 * A bad parameter is 400 `INVALID_QUERY` naming it; a store that keeps no
 * list of events is 501 `NOT_IMPLEMENTED` (docs/events.md).
 */
import type { RequestInfo, TaskRuntime } from '../types.ts'
import type { ListEventsQuery } from '../types/events.ts'
import type { EnvLike } from '../env.ts'
import type { Logger } from '../types/logger.ts'
import { internalError, knownErrorResponse } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { trimTrailingSlashes } from '../http/path.ts'
import { eventNameProblem } from '../events/rules.ts'
import { cursorPosition, DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT } from '../tasks/event-list.ts'
import { authorize, type LoopbackExemption } from './auth.ts'
import { checkParameters, InvalidQueryError, limitParameter, oneParameter } from './runs-query.ts'
import { EVENTS_PREFIX } from './send-events.ts'

const PARAMETERS = new Set(['name', 'limit', 'cursor'])

/** Whether `request` asks for the list: a read of `/__events` itself (every other request there sends events). */
export function isEventListing(request: Request, pathname: string): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && trimTrailingSlashes(pathname) === EVENTS_PREFIX
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
    const page = await runtime.listEvents(parseEventsQuery(params))
    return new R(JSON.stringify(page), { status: 200, headers: { 'content-type': 'application/json' } })
  }

  return async (request: Request, pathname: string, info?: RequestInfo): Promise<Response> => {
    try {
      const denied = authorize(request, info, env, R, loopback)
      if (denied) return denied
      return await list(new URL(request.url).searchParams)
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
