/**
 * HTTP error bodies: `{ error, code }` plus `details` where there are some,
 * a stable `code` for programs and an `error` that says what to do for
 * people (docs/http-api.md "Error codes"). One place maps anything thrown to
 * a status and body, so routes, pages and the admin surface answer alike.
 */
import { SvcError } from '../errors.ts'
import type { ResponseClass, SvcRequest } from './types.ts'

const JSON_TYPE = 'application/json'

/**
 * Turns anything thrown while answering a request into the response to send.
 * Takes the request as Hono's request wrapper, or anything that holds it (a
 * Hono `Context`).
 */
export type ErrorResponder = (error: unknown, at: SvcRequest | { req: SvcRequest }) => Promise<Response>

/** A JSON error response. `headers` are extra headers, such as `Allow`. */
export function jsonError(
  R: ResponseClass,
  status: number,
  code: string,
  error: string,
  headers?: Record<string, string>,
  extra?: Record<string, unknown>,
): Response {
  const body = JSON.stringify(extra ? { error, code, ...extra } : { error, code })
  return new R(body, { status, headers: headers ? { 'content-type': JSON_TYPE, ...headers } : { 'content-type': JSON_TYPE } })
}

/** 405 with the `Allow` header RFC 9110 §15.5.6 requires. */
export function methodNotAllowed(R: ResponseClass, method: string, path: string, allow: string): Response {
  return jsonError(R, 405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; allowed: ${allow}`, { allow })
}

export function notFound(R: ResponseClass, method: string, path: string): Response {
  return jsonError(R, 404, 'NOT_FOUND', `No route matches ${method} ${path}`)
}

/** The status and body an error maps to, when it carries one. */
export function knownErrorResponse(R: ResponseClass, error: unknown): Response | undefined {
  if (error instanceof SvcError) {
    const headers: Record<string, string> = { 'content-type': JSON_TYPE }
    if (error.retryAfterSeconds !== undefined) {
      headers['retry-after'] = String(error.retryAfterSeconds)
    }
    return new R(JSON.stringify(error.toJSON()), { status: error.status, headers })
  }
  // srvx rejects body reads over `maxRequestBodySize` with a 413-style error.
  if (isBodyTooLarge(error)) {
    return jsonError(R, 413, 'PAYLOAD_TOO_LARGE', (error as Error).message || 'Request body is too large')
  }
  return undefined
}

function isBodyTooLarge(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    ((error as { code?: unknown }).code === 'ERR_BODY_TOO_LARGE' || (error as { status?: unknown }).status === 413)
  )
}

/**
 * 500 `INTERNAL_ERROR`. The message and stack are only sent in development:
 * elsewhere they could leak internals to any caller.
 */
export function internalError(R: ResponseClass, error: unknown, dev: boolean): Response {
  if (!dev) return jsonError(R, 500, 'INTERNAL_ERROR', 'Internal Server Error')
  const message = error instanceof Error ? error.message || error.name : String(error)
  const stack = error instanceof Error ? error.stack : undefined
  return jsonError(R, 500, 'INTERNAL_ERROR', message, undefined, stack ? { stack } : undefined)
}
