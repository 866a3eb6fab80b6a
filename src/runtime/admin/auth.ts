/**
 * Auth of the task admin surface and the revalidate endpoint (docs/security.md,
 * docs/http-api.md "Authentication"):
 * - with a secret (`SVC_TASK_SECRET`), every request
 *   needs `Authorization: Bearer <secret>` (RFC 6750 §2.1), compared in
 *   constant time;
 * - without one, only loopback peers pass, judged by the socket address the
 *   host reports (never by `X-Forwarded-For`, which any client can send),
 *   and only when `NODE_ENV` is `development` or `test`;
 * - and only requests the developer made on this machine: a loopback host in
 *   `Host`, no `Origin` but a loopback one, `Sec-Fetch-Site` absent,
 *   `same-origin` or `none` (Fetch Metadata), and no `Forwarded`,
 *   `X-Forwarded-For`, `X-Real-IP` or `Via`. A loopback peer that fails this
 *   (a page of another site or port in the developer's browser, a
 *   DNS-rebound name, a proxy on the same host) gets 403 `FORBIDDEN` naming
 *   the header; see `loopback.ts`;
 * - anything else gets 401 with `WWW-Authenticate: Bearer` (RFC 6750 §3).
 * Edge and function targets report no socket address, so they always need
 * the secret. The exemption comes from the host (`loopback-exemption.ts`,
 * which `createSvcHandler` passes), so the worker's bundle leaves it out. With a secret, only the bearer counts: browsers cannot attach
 * it to another site's request, and the content-type rule (`content-type.ts`)
 * keeps form and no-cors posts out in every mode.
 */
import type { RequestInfo } from '../types.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import type { EnvLike } from '../env.ts'
import { taskSecret } from '../rules.ts'

export { isLoopback } from './loopback.ts'

const encoder = /* @__PURE__ */ new TextEncoder()

/**
 * Compares `given` with `expected` in time that depends only on the length of
 * `expected`, never on where the two differ or on the length of `given`: no
 * early exit, and the loop always walks `expected`. Pure JavaScript, so it
 * runs on every target (no `node:crypto`).
 */
export function timingSafeEqual(given: string, expected: string): boolean {
  const x = encoder.encode(given)
  const y = encoder.encode(expected)
  let diff = x.length ^ y.length
  const n = x.length
  for (let i = 0; i < y.length; i++) diff |= (n === 0 ? 0 : x[i % n]) ^ y[i]
  return diff === 0
}

/**
 * The credentials of `Authorization: Bearer <token>` (RFC 6750 §2.1), or
 * `undefined` when the header is absent or of another scheme. The whole rest
 * of the header, without the blanks around it, is the token: RFC 6750 tokens
 * have no spaces, but an operator's secret may, and enqueue() sends it
 * verbatim. A scan, not a regular expression: the header is the client's,
 * and a lazy match followed by trailing blanks costs the square of its
 * length before any secret is compared.
 */
export function bearerToken(header: string | null): string | undefined {
  if (header === null || header.length < 8 || header.slice(0, 6).toLowerCase() !== 'bearer') return undefined
  let start = 6
  while (start < header.length && isBlank(header.charCodeAt(start))) start++
  if (start === 6) return undefined
  let end = header.length
  while (end > start && isBlank(header.charCodeAt(end - 1))) end--
  return end > start ? header.slice(start, end) : undefined
}

/** SP or HTAB (RFC 9110 §5.6.3). */
function isBlank(c: number): boolean {
  return c === 32 || c === 9
}

// Named in every message; its alias THEN_TASK_SECRET is read too, but not advertised.
export const SECRET_NAMES = 'SVC_TASK_SECRET'

/** What a request without credentials is told where there is no secret. */
export const NO_SECRET = `No task secret is configured: set ${SECRET_NAMES} on the server and send Authorization: Bearer <secret>`

/**
 * The development exemption (`loopbackExemption`): the answer to a request
 * without a secret on a host that reported its peer address, `peer`, or
 * `undefined` to let it in.
 */
export type LoopbackExemption = (request: Request, peer: string, env: EnvLike, R: ResponseClass) => Response | undefined

/** `undefined` when the request may proceed, else the 401 or 403 to send. */
export function authorize(
  request: Request,
  info: RequestInfo | undefined,
  env: EnvLike,
  R: ResponseClass,
  loopback?: LoopbackExemption,
): Response | undefined {
  const secret = taskSecret(env)
  if (secret !== undefined) {
    const token = bearerToken(request.headers.get('authorization'))
    if (token !== undefined && timingSafeEqual(token, secret)) return undefined
    return unauthorized(
      R,
      token !== undefined
        ? `The bearer token does not match the task secret, ${SECRET_NAMES}`
        : `Send Authorization: Bearer <secret>, the value of ${SECRET_NAMES} on the server`,
    )
  }
  const peer = info?.remoteAddress
  // Hosts that report no peer address (edge and function targets) have no
  // loopback exemption, so the rule is not worth mentioning there.
  return peer !== undefined && loopback ? loopback(request, peer, env, R) : unauthorized(R, NO_SECRET)
}

/** 401 with the Bearer challenge (RFC 6750 §3), saying `message`. */
export function unauthorized(R: ResponseClass, message: string): Response {
  return jsonError(R, 401, 'UNAUTHORIZED', message, { 'www-authenticate': 'Bearer realm="svc"' })
}
