/**
 * `/__tasks/runs/<id>/signals/<name>`, whatever the method. Besides the
 * task secret it takes a run token whose claim allows the signal
 * (`run-access.ts`), and it answers pages of the listed origins
 * (`cors.ts`), so it authorizes itself rather than through the admin auth:
 * - `OPTIONS` is the CORS preflight: 204 with what a listed origin may
 *   send, 403 `ORIGIN_NOT_ALLOWED` for another;
 * - then the credentials: the task secret, a run token in
 *   `Authorization` (never `?token=`: this is a write), or, without a
 *   secret in development, the developer's own requests;
 * - then the content-type rule of every write (`content-type.ts`), whatever
 *   the credential: a form or a `no-cors` fetch, which a page of any site
 *   sends without a preflight, gets 415 before its body is read;
 * - then the signal itself (`signals.ts`).
 *
 * Every answer carries the CORS headers of its origin, refusals too, so a
 * page of a listed origin reads their `code`. No other write of the admin
 * surface is ever preflighted with leave.
 */
import type { Logger, RequestInfo } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { internalError, knownErrorResponse } from '../http/errors.ts'
import type { LoopbackExemption } from './auth.ts'
import { unsupportedContent } from './content-type.ts'
import { allowedOrigins, corsHeaders, preflight, RUN_SIGNAL_CORS, withHeaders } from './cors.ts'
import { runAccess } from './run-access.ts'
import { type SignalRoutes, sendSignalRoute } from './signals.ts'

export interface SignalEndpointOptions {
  routes: SignalRoutes
  env: EnvLike
  logger: Logger
  dev: boolean
  /** The listed origins: `runEvents.origins`, else `SVC_REALTIME_ORIGINS`. */
  origins?: readonly string[]
  /** The development exemption of the admin auth, on hosts that report peer addresses. */
  loopback?: LoopbackExemption
}

/** Answers `request` to `pathname`, the endpoint of signal `name` of run `runId`. */
export type SignalEndpoint = (request: Request, pathname: string, runId: string, name: string, info?: RequestInfo) => Promise<Response>

export function createSignalEndpoint(options: SignalEndpointOptions): SignalEndpoint {
  const { routes, env, logger, dev, loopback } = options
  const { R } = routes
  const allowed = allowedOrigins(options.origins, env)

  return async (request, pathname, runId, name, info) => {
    if (request.method === 'OPTIONS') return preflight(request, allowed, R, RUN_SIGNAL_CORS)
    const cors = corsHeaders(request, allowed)
    try {
      const access = await runAccess(request, runId, { info, env, R, headers: cors, loopback, signal: name })
      if (!access.ok) return access.response
      const refused = unsupportedContent(request, R)
      const response = refused ?? (await sendSignalRoute(routes, request, pathname, runId, name))
      return await withHeaders(R, response, cors)
    } catch (error) {
      // RunNotFoundError (404), RunFinishedError (409), TooManySignalsError (429), body errors (400/413) carry their status.
      const known = knownErrorResponse(R, error)
      if (!known) logger.error(`[svc] ${request.method} ${pathname} failed:`, error)
      return withHeaders(R, known ?? internalError(R, error, dev), cors)
    }
  }
}
