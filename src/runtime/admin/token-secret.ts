/**
 * Which task secret `createRunToken()` signs with: the one the admin surface
 * over the active runtime checks. Apart from the signing, so that a host
 * that serves no run stream records the secret without carrying the tokens.
 */
import type { TaskRuntime } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { tokenSecret } from '../signing-secret.ts'
import { getActiveTaskRuntime } from '../tasks/client/active.ts'

// Kept on globalThis under a registered symbol, as the active runtime is
// (`tasks/active.ts`), so that two copies of this module in one process agree.
const KEY: unique symbol = Symbol.for('svc.runToken.env')

type Holder = { [KEY]?: WeakMap<TaskRuntime, EnvLike> }

/**
 * Records that the admin surface over `runtime` checks the task secret of
 * `env`, so that `createRunToken()` signs with that secret while `runtime`
 * is the active one. The admin surface calls it as it is built.
 */
export function registerTokenSecret(runtime: TaskRuntime, env: EnvLike): void {
  const holder = globalThis as Holder
  ;(holder[KEY] ??= new WeakMap()).set(runtime, env)
}

export { tokenSecret }

/** The secret run tokens are signed with under the admin surface over the active runtime, when this process serves one. */
export function activeSecret(): string | undefined {
  const runtime = getActiveTaskRuntime()
  const env = runtime && (globalThis as Holder)[KEY]?.get(runtime)
  return env ? tokenSecret(env) : undefined
}
