/**
 * String environment of the host, edge-safe: `process.env` where it exists
 * (Node, function platforms), an empty object elsewhere. Worker bindings come
 * per request instead; see `stringBindings`.
 */
export function hostEnv(): Record<string, string | undefined> {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
  return proc?.env ?? {}
}

/** The string-valued entries of a worker's `env` bindings (secrets and vars). */
export function stringBindings(env: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  if (env && typeof env === 'object') {
    for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value
  }
  return out
}
