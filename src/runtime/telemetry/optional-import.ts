/**
 * OpenTelemetry packages svc uses when the app has them and does without
 * otherwise: `@opentelemetry/api` for the trace context of requests to the
 * task server (`outgoing.ts`), `@opentelemetry/api-logs` for log records on
 * an API before 1.10 (`logs.ts`). Edge-safe.
 */

/** The packages, by name. */
export const OTEL_API = '@opentelemetry/api'
export const OTEL_API_LOGS = '@opentelemetry/api-logs'

type Require = (id: string) => unknown
type ProcessLike = { getBuiltinModule?(id: string): unknown; cwd?(): string }

const loaded = new Map<string, unknown>()

/**
 * The module `specifier` names, as the app installed it, or `undefined`
 * when it cannot be loaded. Loaded with Node's `require` from the working
 * directory, reached through `process.getBuiltinModule`, so the bundle holds
 * no `import()` of a name only known when it runs: workerd, and Miniflare
 * with it, refuse a module with a dynamic specifier. Both packages ship a
 * CommonJS build, and keep their state on `globalThis`, so this copy and an
 * ES import of the app's agree. Where there is no Node `process` (a
 * worker), nothing is loaded and the app hands svc the package instead
 * (docs/observability.md). Any failure counts as absent: trace headers and
 * log records are extras, and a package that cannot be loaded must not fail
 * an `enqueue()` or a run. Resolved as a promise, which callers await.
 */
export async function importOptional<T>(specifier: string): Promise<T | undefined> {
  if (loaded.has(specifier)) return loaded.get(specifier) as T | undefined
  let module: unknown
  try {
    const proc = (globalThis as { process?: ProcessLike }).process
    const nodeModule = proc?.getBuiltinModule?.('node:module') as { createRequire?(from: string): Require } | undefined
    if (nodeModule?.createRequire && proc?.cwd) module = nodeModule.createRequire(`${proc.cwd()}/`)(specifier)
  } catch {
    module = undefined
  }
  loaded.set(specifier, module)
  return module as T | undefined
}
