/**
 * OpenTelemetry packages svc uses when the app has them and does without
 * otherwise: `@opentelemetry/api` for the trace context of requests to the
 * task server (`outgoing.ts`), `@opentelemetry/api-logs` for log records on
 * an API before 1.10 (`logs.ts`). Edge-safe.
 */

/**
 * Package names as values a bundler does not follow: on Node, the import
 * finds the app's own copy when it runs. A worker's bundle resolves no
 * module at run time, so the import fails there, and the app hands svc the
 * package instead (docs/observability.md).
 */
export const OTEL_API: string = '@opentelemetry/api'
export const OTEL_API_LOGS: string = '@opentelemetry/api-logs'

const imported = new Map<string, Promise<unknown>>()

/**
 * The module `specifier` names, imported once per process, or `undefined`
 * when it cannot be imported. Any failure counts as absent: trace headers
 * and log records are extras, and a package that cannot be loaded must not
 * fail an `enqueue()` or a run.
 */
export function importOptional<T>(specifier: string): Promise<T | undefined> {
  let module = imported.get(specifier)
  if (module === undefined) {
    module = import(/* @vite-ignore */ specifier).catch(() => undefined)
    imported.set(specifier, module)
  }
  return module as Promise<T | undefined>
}
