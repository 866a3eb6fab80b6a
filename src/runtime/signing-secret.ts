/**
 * The secret svc's signed tokens (run tokens, callback URLs) are signed and
 * checked with: the task secret, or, in development without one, a random
 * secret made once for this process, so that `createRunToken()`,
 * `subscribeRun` and callback URLs work in `svc dev` with no setup. Tokens
 * signed with it hold only in this process, and production has none:
 * there, no secret means no tokens. Edge-safe.
 */
import { type EnvLike, isDevelopmentEnv } from './env.ts'
import { taskSecret } from './rules.ts'

const DEV_KEY: unique symbol = Symbol.for('svc.runToken.devSecret')

/** The secret tokens are signed and checked with under `env`, or `undefined` in production without a task secret. */
export function tokenSecret(env: EnvLike): string | undefined {
  const secret = taskSecret(env)
  if (secret !== undefined || !isDevelopmentEnv(env)) return secret
  const holder = globalThis as { [DEV_KEY]?: string }
  if (holder[DEV_KEY] === undefined) {
    const bytes = crypto.getRandomValues(new Uint8Array(32))
    holder[DEV_KEY] = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
  }
  return holder[DEV_KEY]
}
