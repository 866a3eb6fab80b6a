/**
 * Which task secret `createRunToken()` signs with: the one the admin surface
 * over the active runtime checks. Apart from the signing, so that a host
 * that serves no run stream records the secret without carrying the tokens.
 */
import type { TaskRuntime } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { taskSecret } from '../rules.ts'
import { getActiveTaskRuntime } from '../tasks/active.ts'

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

/** The task secret of the admin surface over the active runtime, when this process serves one and it has a secret. */
export function activeSecret(): string | undefined {
  const runtime = getActiveTaskRuntime()
  const env = runtime && (globalThis as Holder)[KEY]?.get(runtime)
  return env ? taskSecret(env) : undefined
}
