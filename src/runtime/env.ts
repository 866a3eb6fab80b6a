/**
 * Environment access that works where `process` does not exist (edge
 * workers without Node compatibility): read through `globalThis`, guarded.
 */

export type EnvLike = Record<string, string | undefined>

/** `process.env` where it exists (Node, function platforms), an empty object elsewhere. */
export function processEnv(): EnvLike {
  const env = (globalThis as { process?: { env?: EnvLike } }).process?.env
  return env ?? {}
}

/** `1` or `true` (any case) turn a flag on. */
export function isEnabled(value: string | undefined): boolean {
  if (value === undefined) return false
  const v = value.trim().toLowerCase()
  return v === '1' || v === 'true'
}

/** The string-valued entries of a worker's `env` bindings (secrets and vars). */
export function stringBindings(env: unknown): EnvLike {
  const out: EnvLike = {}
  if (env && typeof env === 'object') {
    for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value
  }
  return out
}

/** Whether `env` is a development or test environment (`NODE_ENV`), where svc relaxes what only a development machine may. */
export function isDevelopmentEnv(env: EnvLike): boolean {
  return env.NODE_ENV === 'development' || env.NODE_ENV === 'test'
}
