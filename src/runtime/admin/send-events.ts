/**
 * Sending events over HTTP, under the task admin surface's auth
 * (`auth.ts`) and body rules (JSON, at most `bodyLimit` bytes):
 *
 * | Method | Path                | Body | Answer |
 * |--------|---------------------|------|--------|
 * | POST   | `/__events/<name>`  | the event's data (empty: none) | 202 `{ id, name, runs }`; the `Idempotency-Key` header is the event's id |
 * | POST   | `/__events`         | `[{ name, data?, id? }, …]`, at most 100 | 202 `{ events: [{ id, name, runs }, …] }` |
 *
 * A bad name, id or list is 400 `INVALID_EVENT`, and nothing is sent: each
 * event of a list is checked before any is sent (docs/events.md).
 */
import type { RequestInfo, TaskRuntime } from '../types.ts'
import type { EventInput } from '../types/events.ts'
import type { EnvLike } from '../env.ts'
import type { Logger } from '../types/logger.ts'
import { internalError, jsonError, knownErrorResponse, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { decodeSegment, trimTrailingSlashes } from '../http/path.ts'
import { readJsonBody } from '../http/body.ts'
import { describe } from '../describe.ts'
import { authorize, type LoopbackExemption } from './auth.ts'
import { unsupportedContent } from './content-type.ts'

export const EVENTS_PREFIX = '/__events'

/** Whether `pathname` is `/__events` or below it. */
export function isEventsPath(pathname: string): boolean {
  return (
    pathname.startsWith(EVENTS_PREFIX) && (pathname.length === EVENTS_PREFIX.length || pathname.charCodeAt(EVENTS_PREFIX.length) === 47)
  )
}

export interface SendEventsOptions {
  runtime: TaskRuntime
  env: EnvLike
  bodyLimit: number
  R: ResponseClass
  logger: Logger
  dev: boolean
  /** The development exemption of the auth, where the host reports peer addresses. */
  loopback?: LoopbackExemption
}

export function createSendEventsHandler(options: SendEventsOptions) {
  const { runtime, env, bodyLimit, R, logger, dev, loopback } = options
  const json = (status: number, body: unknown) => new R(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

  async function route(request: Request, pathname: string): Promise<Response> {
    const rest = trimTrailingSlashes(pathname.slice(EVENTS_PREFIX.length))
    // `/__events` itself is listed too (`list-events.ts`).
    if (request.method !== 'POST') return methodNotAllowed(R, request.method, pathname, rest === '' ? 'GET, HEAD, POST' : 'POST')
    const { value } = await readJsonBody(request, bodyLimit)
    if (rest === '') {
      if (!Array.isArray(value)) {
        return jsonError(
          R,
          400,
          'INVALID_EVENT',
          `POST ${EVENTS_PREFIX} takes a JSON array of { name, data?, id? } (got ${describe(value)})`,
        )
      }
      return json(202, { events: await runtime.sendEvents(value as EventInput[]) })
    }
    // The rest of the path is the name, as written (billing/invoice-paid)
    // or with its '/' percent-encoded (billing%2Finvoice-paid); the name
    // rule then judges it, empty parts included.
    const name = rest.slice(1).split('/').map(decodeSegment).join('/')
    const id = request.headers.get('idempotency-key') ?? undefined
    return json(202, await runtime.sendEvent(name, value, { id }))
  }

  return async (request: Request, pathname: string, info?: RequestInfo): Promise<Response> => {
    try {
      const denied = authorize(request, info, env, R, loopback) ?? unsupportedContent(request, R)
      if (denied) return denied
      return await route(request, pathname)
    } catch (error) {
      // A bad name, id or list: the message says which and why.
      if (error instanceof TypeError || error instanceof RangeError) return jsonError(R, 400, 'INVALID_EVENT', error.message)
      const known = knownErrorResponse(R, error)
      if (known) return known
      logger.error(`[svc] ${request.method} ${pathname} failed:`, error)
      return internalError(R, error, dev)
    }
  }
}
