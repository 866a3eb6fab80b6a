/**
 * The exemption from the task secret in development (see `auth.ts`): where
 * no secret is set and `NODE_ENV` is `development` or `test`, a request from
 * a loopback peer that the developer made on this machine (`loopback.ts`)
 * passes. Only hosts that report peer addresses reach it, and
 * `createSvcHandler` passes it to them; the Cloudflare worker, which
 * reports none, leaves it out of its bundle.
 */
import { isDevelopmentEnv } from '../env.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { type LoopbackExemption, NO_SECRET, SECRET_NAMES, unauthorized } from './auth.ts'
import { foreignRequestProblem, isLoopback } from './loopback.ts'

export const loopbackExemption: LoopbackExemption = (request, peer, env, R) => {
  if (isDevelopmentEnv(env) && isLoopback(peer)) {
    const problem = foreignRequestProblem(request)
    return problem === undefined ? undefined : forbidden(R, problem)
  }
  return unauthorized(
    R,
    `${NO_SECRET} (without a secret, only loopback requests are allowed, and only when NODE_ENV is development or test)`,
  )
}

/** 403 for a loopback request that may be another site's or a proxy's: `problem` says which header, the rest what to do. */
function forbidden(R: ResponseClass, problem: string): Response {
  return jsonError(
    R,
    403,
    'FORBIDDEN',
    `${problem}. Without a task secret, only requests made on this machine by no other site and through no proxy are allowed; to use this server from elsewhere, set ${SECRET_NAMES} on the server and send Authorization: Bearer <secret>`,
  )
}
