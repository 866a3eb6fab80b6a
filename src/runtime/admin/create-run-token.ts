/**
 * `createRunToken()`: what an app's server calls to let one of its pages
 * follow one run (docs/realtime.md). The token is signed with a key
 * derived from the task secret (`run-token.ts`), the secret found the way
 * `enqueue()` finds its task server: the one this process serves, else the
 * environment.
 */
import { describe } from '../describe.ts'
import { processEnv } from '../env.ts'
import { taskSecret } from '../rules.ts'
import { MAX_RUN_ID_LENGTH, signRunToken } from './run-token.ts'
import { activeSecret } from './token-secret.ts'

/** How long a run token lasts when `expiresIn` is not given: one hour. */
export const DEFAULT_RUN_TOKEN_SECONDS = 3600

/** The longest a run token may last: 7 days. A page that follows a longer run asks for a new token as it reconnects. */
export const MAX_RUN_TOKEN_SECONDS = 7 * 24 * 3600

export interface RunTokenOptions {
  /**
   * Seconds until the token expires, a whole number from 1 to 604800 (7
   * days). Note: a stream opened with the token ends when it expires; the
   * client then connects again with a new one.
   * @default 3600
   */
  expiresIn?: number
  /**
   * The secret whose derived key signs the token: the task server's `SVC_TASK_SECRET`.
   * @default the task secret of the server this process runs, else SVC_TASK_SECRET of the environment
   */
  secret?: string
}

/**
 * A token that lets its holder read run `runId` (its progress over
 * `GET /__tasks/runs/<id>/stream`) and nothing else, until it expires.
 * Hand it to the page that shows the run; `subscribeRun` from `svcjs/client`
 * sends it. Throws a `TypeError` or `RangeError` for a bad argument, and a
 * `TypeError` when no task secret is found to sign with.
 */
export async function createRunToken(runId: string, options: RunTokenOptions = {}): Promise<string> {
  const where = 'createRunToken()'
  if (typeof runId !== 'string' || runId === '' || runId.length > MAX_RUN_ID_LENGTH) {
    throw new TypeError(
      `${where}: runId must be a run id, a non-empty string of at most ${MAX_RUN_ID_LENGTH} characters (got ${describe(runId)})`,
    )
  }
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object such as { expiresIn: 3600 } (got ${describe(options)})`)
  }
  const expiresIn = options.expiresIn ?? DEFAULT_RUN_TOKEN_SECONDS
  if (typeof expiresIn !== 'number') {
    throw new TypeError(`${where}: expiresIn must be a number of seconds (got ${describe(expiresIn)})`)
  }
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_RUN_TOKEN_SECONDS) {
    throw new RangeError(
      `${where}: expiresIn must be a whole number of seconds from 1 to ${MAX_RUN_TOKEN_SECONDS} (7 days) (got ${describe(expiresIn)})`,
    )
  }
  if (options.secret !== undefined && (typeof options.secret !== 'string' || options.secret === '')) {
    throw new TypeError(`${where}: secret must be a non-empty string, the task server's SVC_TASK_SECRET (got ${describe(options.secret)})`)
  }
  const secret = options.secret ?? activeSecret() ?? taskSecret(processEnv())
  if (secret === undefined) {
    throw new TypeError(
      `${where}: there is no task secret to sign the token with. Set SVC_TASK_SECRET (the same value on the task server), or pass { secret }`,
    )
  }
  return signRunToken(runId, Math.floor(Date.now() / 1000) + expiresIn, secret)
}
