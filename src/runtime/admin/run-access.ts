/**
 * Who may read one run's stream (`GET /__tasks/runs/<id>/stream`):
 * - the holder of a run token for that run (`run-token.ts`), sent as
 *   `?token=` (what `EventSource` can send) or `Authorization: Bearer`;
 * - whoever may use the rest of the admin surface (`auth.ts`): the task
 *   secret as the bearer, or the developer's own requests where there is
 *   no secret.
 *
 * A token for another run, an expired one, or one not signed with this
 * server's secret gets 401 with the reason as its `code`
 * (`RUN_TOKEN_WRONG_RUN`, `RUN_TOKEN_EXPIRED`, `RUN_TOKEN_INVALID`) and
 * `WWW-Authenticate: Bearer` with `error="invalid_token"` (RFC 6750 §3.1).
 */
import type { RequestInfo } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { taskSecret } from '../rules.ts'
import { authorize, bearerToken, type LoopbackExemption, timingSafeEqual } from './auth.ts'
import { withHeaders } from './cors.ts'
import { verifyRunToken } from './run-token.ts'
import { tokenSecret } from './token-secret.ts'

/**
 * May read, until `expiresAt` (Unix seconds) when a run token let it in,
 * and `token` then, which the stream quotas count by; or the answer that
 * refuses, with `headers` added.
 */
export type RunAccess = { ok: true; expiresAt?: number; token?: string } | { ok: false; response: Response }

export async function runAccess(
  request: Request,
  runId: string,
  info: RequestInfo | undefined,
  env: EnvLike,
  R: ResponseClass,
  headers: Record<string, string>,
  loopback?: LoopbackExemption,
): Promise<RunAccess> {
  const secret = taskSecret(env)
  const bearer = bearerToken(request.headers.get('authorization'))
  if (bearer !== undefined && secret !== undefined && timingSafeEqual(bearer, secret)) return { ok: true }
  const token = new URL(request.url).searchParams.get('token') ?? bearer
  if (token === undefined) {
    if (secret !== undefined) {
      return refuse(
        R,
        'UNAUTHORIZED',
        'Send a run token (from createRunToken() on the server) as ?token=<token> or Authorization: Bearer <token>, or the task secret as the bearer',
        headers,
      )
    }
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
  return { ok: true, expiresAt: check.expiresAt, token }
}

function refuse(R: ResponseClass, code: string, message: string, headers: Record<string, string>, error?: string): RunAccess {
  const challenge = error === undefined ? 'Bearer realm="svc"' : `Bearer realm="svc", error="${error}"`
  return { ok: false, response: jsonError(R, 401, code, message, { ...headers, 'www-authenticate': challenge }) }
}
