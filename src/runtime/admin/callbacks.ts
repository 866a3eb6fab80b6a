/**
 * `POST|GET /__tasks/callbacks/<token>`: the URLs of
 * `ctx.step.createCallback` (tasks/steps/callbacks.ts), answered without
 * the task secret: the signed token is the credential, and it names one
 * wait of one run. A token that was altered, made with another secret or
 * expired wakes nothing (401 `CALLBACK_INVALID`, 410 `CALLBACK_EXPIRED`);
 * the first request with a good one is kept for the run (202), and later
 * ones find it used (409 `CALLBACK_USED`).
 *
 * The body is kept as the run reads it: JSON parsed (400 `INVALID_JSON`
 * when it is not), a form's fields as an object, anything else as text,
 * at most the body limit and the run's payload limit (413). A `GET`
 * callback keeps its query's parameters as the body.
 */
import type { CallbackRequest, TaskRuntime } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { jsonError, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { decodeSegment } from '../http/path.ts'
import { parseJson, readBodyText } from '../http/body.ts'
import { tokenSecret } from '../signing-secret.ts'
import { CALLBACKS_PATH, verifyCallback } from '../tasks/steps/callbacks.ts'

/** Headers a callback does not keep: credentials the sender meant for someone else. */
const DROPPED_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization'])

/** Whether `pathname` is a callback URL's. */
export function isCallbackPath(pathname: string): boolean {
  return pathname.startsWith(CALLBACKS_PATH)
}

export interface CallbackEndpointOptions {
  runtime: TaskRuntime
  env: EnvLike
  R: ResponseClass
  bodyLimit: number
  /** The runtime's clock, in epoch ms. */
  now(): number
}

export function callbackEndpoint(options: CallbackEndpointOptions): (request: Request, pathname: string) => Promise<Response> {
  const { runtime, env, R, bodyLimit } = options
  const answer = (status: number, body: unknown) => new R(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
  return async (request, pathname) => {
    const method = request.method
    if (method !== 'POST' && method !== 'GET') return methodNotAllowed(R, method, pathname, 'POST, GET')
    const rest = pathname.slice(CALLBACKS_PATH.length)
    const secret = tokenSecret(env)
    if (rest === '' || rest.includes('/') || secret === undefined) {
      return jsonError(R, 401, 'CALLBACK_INVALID', 'The callback URL is not one this server makes')
    }
    const check = await verifyCallback(decodeSegment(rest), secret, options.now())
    if (!check.ok) return jsonError(R, check.status, check.code, check.message)
    if (method !== check.method) return methodNotAllowed(R, method, pathname, check.method)
    const received: CallbackRequest = {
      method,
      body: method === 'GET' ? queryBody(request) : await bodyOf(request, bodyLimit),
      headers: keptHeaders(request.headers),
      receivedAt: new Date(options.now()).toISOString(),
    }
    const result = await runtime.completeToken(check.tokenId, received)
    switch (result) {
      case 'completed':
        return answer(202, { ok: true, status: 'received' })
      case 'already_completed':
        return jsonError(R, 409, 'CALLBACK_USED', 'This callback was used already: a callback takes one request')
      case 'timed_out':
        return jsonError(R, 410, 'CALLBACK_EXPIRED', 'This callback timed out before the request came')
      case 'run_cancelled':
        return jsonError(R, 410, 'RUN_CANCELLED', 'The run this callback would wake was cancelled')
      default:
        return jsonError(R, 404, 'CALLBACK_NOT_FOUND', 'No run waits on this callback any more (its run is no longer kept)')
    }
  }
}

async function bodyOf(request: Request, limit: number): Promise<unknown> {
  const text = await readBodyText(request, limit)
  if (text === '') return null
  const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase()
  if (type === 'application/json' || type.endsWith('+json')) return parseJson(text)
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(text))
  return text
}

function queryBody(request: Request): Record<string, string> | null {
  const params = new URL(request.url).searchParams
  return params.size === 0 ? null : Object.fromEntries(params)
}

function keptHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {}
  // forEach rather than for…of: an app's tsconfig may leave out the DOM's iterable types.
  headers.forEach((value, name) => {
    if (!DROPPED_HEADERS.has(name)) kept[name] = value
  })
  return kept
}
