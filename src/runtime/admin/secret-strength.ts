/**
 * The strength rule of the task secret (`taskSecretProblem` in rules.ts),
 * applied as a server starts. Every host builds the admin surface through
 * `createCoreHandler` (startSvcServer, startWebServer, the function and
 * worker targets), which calls this; startSvcServer and startWebServer call
 * it again before they open their store, so a refused start leaves nothing
 * open.
 *
 * Outside development a short secret is an error. In development, which
 * is `svc dev`, `dev: true`, or NODE_ENV `development` or `test` (the
 * environments where `auth.ts` lets loopback requests in without any
 * secret), it is a warning, printed once per process: a dev server is
 * rebuilt on every change, and one notice is enough.
 */
import { type EnvLike, isDevelopmentEnv } from '../env.ts'
import type { Logger } from '../types.ts'
import { taskSecret, taskSecretProblem } from '../rules.ts'

let warned = false

/**
 * Throws a `RangeError` naming `where` when the task secret of `env` is too
 * short and the server is not a development one; warns once through
 * `logger` when it is. A missing secret passes: the admin surface then
 * refuses every request that is not the developer's own.
 */
export function checkTaskSecretStrength(env: EnvLike, dev: boolean, where: string, logger: Pick<Logger, 'warn'>): void {
  const secret = taskSecret(env)
  const problem = secret === undefined ? null : taskSecretProblem(secret)
  if (problem === null) return
  if (!dev && !isDevelopmentEnv(env)) throw new RangeError(`${where}: ${problem}`)
  if (warned) return
  warned = true
  logger.warn(`[svc] ${problem}. It is allowed in development only: a production server refuses to start with it`)
}
