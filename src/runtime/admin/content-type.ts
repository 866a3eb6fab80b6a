/**
 * The content-type rule of the task admin surface and of `/__svc/*`, in
 * every mode: a POST, PUT, PATCH or DELETE that carries a body must say it
 * is JSON, `application/json` or a `+json` type (RFC 6839 §3.1), parameters
 * such as `charset` aside. Else 415 `UNSUPPORTED_MEDIA_TYPE`.
 *
 * A page of another site can send `text/plain`, form-urlencoded and
 * multipart bodies without asking (an HTML form, or `fetch` in `no-cors`
 * mode), since those are the CORS-safelisted types (Fetch, "CORS-safelisted
 * request-header"). A JSON type needs a CORS preflight, which this server
 * never answers with permission, so a body that reaches a handler was sent
 * by a client that is not a page of another site.
 *
 * Whether a body is there is read from the framing headers (RFC 9112 §6.3):
 * `Transfer-Encoding`, or a `Content-Length` other than 0. A `Request` built
 * in-process has neither, so there a `Content-Type` counts as a body, as
 * `fetch` sets one for a string or form body.
 */
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** `undefined` when `request` carries no body or a JSON one, else the 415 to send. */
export function unsupportedContent(request: Request, R: ResponseClass): Response | undefined {
  if (!WRITES.has(request.method)) return undefined
  const headers = request.headers
  const type = headers.get('content-type')
  if (type !== null && isJsonMediaType(type)) return undefined
  if (!carriesBody(headers, type)) return undefined
  return jsonError(
    R,
    415,
    'UNSUPPORTED_MEDIA_TYPE',
    `${request.method} bodies here are JSON: send Content-Type: application/json (got ${type === null ? 'no Content-Type' : JSON.stringify(type)})`,
  )
}

/** `application/json` or `application/<anything>+json`, in any case, with or without parameters. */
export function isJsonMediaType(value: string): boolean {
  const semicolon = value.indexOf(';')
  const essence = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase()
  return essence === 'application/json' || (essence.startsWith('application/') && essence.endsWith('+json'))
}

function carriesBody(headers: Headers, type: string | null): boolean {
  if (headers.has('transfer-encoding')) return true
  const length = headers.get('content-length')
  if (length !== null) return Number(length) !== 0
  return type !== null
}
