/**
 * Who may read one run's stream (`GET /__tasks/runs/<id>/stream`), and
 * send it a signal (`POST /__tasks/runs/<id>/signals/<name>`):
 * - the holder of a run token for that run (`run-token.ts`), sent as
 *   `Authorization: Bearer`, or, to read, as `?token=` (what `EventSource`
 *   can send); to send a signal, the token's claim must allow its name;
 * - whoever may use the rest of the admin surface (`auth.ts`): the task
 *   secret as the bearer, or the developer's own requests where there is
 *   no secret.
 *
 * A token for another run, an expired one, or one not signed with this
 * server's secret gets 401 with the reason as its `code`
 * (`RUN_TOKEN_WRONG_RUN`, `RUN_TOKEN_EXPIRED`, `RUN_TOKEN_INVALID`) and
 * `WWW-Authenticate: Bearer` with `error="invalid_token"`; a valid token
 * that does not allow the signal gets 403 `RUN_TOKEN_NOT_ALLOWED` with
 * `error="insufficient_scope"` (RFC 6750 §3.1).
 */
import type { RequestInfo } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { taskSecret } from '../rules.ts'
import { authorize, bearerToken, type LoopbackExemption, timingSafeEqual } from './auth.ts'
import { withHeaders } from './cors.ts'
import { allowsSignal, type RunTokenSignals, verifyRunToken } from './run-token.ts'
import { tokenSecret } from './token-secret.ts'

/**
 * May go on, until `expiresAt` (Unix seconds) when a run token let it in,
 * and `token` then, which the stream quotas count by; or the answer that
 * refuses, with `headers` added.
 */
export type RunAccess = { ok: true; expiresAt?: number; token?: string } | { ok: false; response: Response }

export interface RunAccessOptions {
  info: RequestInfo | undefined
  env: EnvLike
  R: ResponseClass
  /** Added to every refusal: the CORS headers of the answer. */
  headers: Record<string, string>
  /** The development exemption of the admin auth, on hosts that report peer addresses. */
  loopback?: LoopbackExemption
  /**
   * The signal the request sends, which a run token must allow. The token
   * then counts only in `Authorization`: a write takes no credential from
   * its URL, which logs keep.
   * @default none: the request reads the run
   */
  signal?: string
}

export async function runAccess(request: Request, runId: string, options: RunAccessOptions): Promise<RunAccess> {
  const { info, env, R, headers, loopback, signal } = options
  const secret = taskSecret(env)
  const bearer = bearerToken(request.headers.get('authorization'))
  if (bearer !== undefined && secret !== undefined && timingSafeEqual(bearer, secret)) return { ok: true }
  const token = signal === undefined ? (new URL(request.url).searchParams.get('token') ?? bearer) : bearer
  if (token === undefined) {
    if (secret !== undefined) return refuse(R, 'UNAUTHORIZED', missing(request, signal), headers)
    // No secret: the developer's own requests pass, as on the rest of the surface.
    const denied = authorize(request, info, env, R, loopback)
    return denied === undefined ? { ok: true } : { ok: false, response: await withHeaders(R, denied, headers) }
  }
  // In development without a task secret, the secret this process signs its tokens with (token-secret.ts).
  const signing = tokenSecret(env)
  if (signing === undefined) {
    return refuse(
      R,
      'UNAUTHORIZED',
      'No task secret is configured, so run tokens cannot be checked: set SVC_TASK_SECRET on the server, the secret createRunToken() signs with',
      headers,
    )
  }
  const check = await verifyRunToken(token, runId, signing)
  if (!check.ok) return refuse(R, check.code, check.message, headers, 'invalid_token')
  if (signal !== undefined && !allowsSignal(check.signals, signal)) {
    const response = jsonError(R, 403, 'RUN_TOKEN_NOT_ALLOWED', notAllowed(check.signals, runId, signal), {
      ...headers,
      'www-authenticate': 'Bearer realm="svc", error="insufficient_scope"',
    })
    return { ok: false, response }
  }
  return { ok: true, expiresAt: check.expiresAt, token }
}

/** What a request without credentials is told to send. */
function missing(request: Request, signal: string | undefined): string {
  if (signal === undefined) {
    return 'Send a run token (from createRunToken() on the server) as ?token=<token> or Authorization: Bearer <token>, or the task secret as the bearer'
  }
  const inQuery = new URL(request.url).searchParams.has('token') ? ' (a signal takes the token in Authorization, never in ?token=)' : ''
  return `Send a run token that allows this signal (createRunToken(runId, { signals: ['${signal}'] }) on the server) as Authorization: Bearer <token>, or the task secret as the bearer${inQuery}`
}

/** Why a valid token may not send `signal`, and the token that may. */
function notAllowed(signals: RunTokenSignals, runId: string, signal: string): string {
  if (signals === undefined || signals === true) {
    return `The run token only reads run "${runId}" and sends it no signal: make one that may with createRunToken(runId, { signals: ['${signal}'] }) on the app's server`
  }
  const names = signals.map((name) => `'${name}'`).join(', ')
  return `The run token may send run "${runId}" the signals ${names}, not '${signal}': make one that may with createRunToken(runId, { signals: [${names}, '${signal}'] }) on the app's server`
}

function refuse(R: ResponseClass, code: string, message: string, headers: Record<string, string>, error?: string): RunAccess {
  const challenge = error === undefined ? 'Bearer realm="svc"' : `Bearer realm="svc", error="${error}"`
  return { ok: false, response: jsonError(R, 401, code, message, { ...headers, 'www-authenticate': challenge }) }
}
