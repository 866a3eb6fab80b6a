/**
 * `createRunToken()`: what an app's server calls to let one of its pages
 * follow one run, and send it signals (docs/realtime.md). The token is signed with a key
 * derived from the task secret (`run-token.ts`), the secret found the way
 * `enqueue()` finds its task server: the one this process serves, else the
 * environment.
 */
import { describe } from '../describe.ts'
import { processEnv } from '../env.ts'
import { taskSecret } from '../rules.ts'
import { signalNameProblem } from '../events/rules.ts'
import { MAX_RUN_ID_LENGTH, MAX_RUN_TOKEN_LENGTH, type RunTokenSignals, signRunToken } from './run-token.ts'
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
  /**
   * Lets the holder send signals to the run too
   * (`POST /__tasks/runs/<id>/signals/<name>`, `sendRunSignal` from
   * `svcjs/client`): `true` for any signal, or a list of the names it may
   * send, such as `['message']`. Note: the token must stay within 512
   * characters, which bounds how many names it can list.
   * @default none: the token only reads the run
   */
  signals?: boolean | readonly string[]
}

/**
 * A token that lets its holder read run `runId` (its progress over
 * `GET /__tasks/runs/<id>/stream`), and send it the signals `signals`
 * allows, and nothing else, until it expires. Hand it to the page that
 * shows the run; `subscribeRun` and `sendRunSignal` from `svcjs/client`
 * send it. Throws a `TypeError` or `RangeError` for a bad argument, and a
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
  const signals = signalsOption(options.signals, where)
  const secret = options.secret ?? activeSecret() ?? taskSecret(processEnv())
  if (secret === undefined) {
    throw new TypeError(
      `${where}: there is no task secret to sign the token with. Set SVC_TASK_SECRET (the same value on the task server), or pass { secret }`,
    )
  }
  const token = await signRunToken(runId, Math.floor(Date.now() / 1000) + expiresIn, secret, signals)
  // The task server refuses longer tokens unread (run-token.ts).
  if (token.length > MAX_RUN_TOKEN_LENGTH) {
    throw new RangeError(
      `${where}: the token would be ${token.length} characters, more than the ${MAX_RUN_TOKEN_LENGTH} a run token may have: list fewer or shorter signal names, or pass signals: true for any signal`,
    )
  }
  return token
}

/** The `signals` option as the claim holds it: `true`, the names without repeats, or `undefined` for none. */
function signalsOption(value: unknown, where: string): RunTokenSignals {
  if (value === undefined || value === false) return undefined
  if (value === true) return true
  if (!Array.isArray(value)) {
    throw new TypeError(
      `${where}: signals must be true (any signal) or a list of signal names such as ['message'] (got ${describe(value)})`,
    )
  }
  if (value.length === 0) {
    throw new TypeError(
      `${where}: signals lists no name; list the signals the token may send, such as ['message'], or leave signals out for a token that only reads`,
    )
  }
  for (const name of value) {
    const problem = signalNameProblem(name)
    if (problem) throw new TypeError(`${where}: each entry of signals must be a signal name: ${problem}`)
  }
  return [...new Set(value as string[])]
}
