/**
 * The trace context of the requests `enqueue()`, `enqueueMany()`,
 * `completeToken()`, `cancelRun()` and `sendEvent()` send to the task server
 * (`tasks/client.ts`), so that the runs they start or resume continue the
 * caller's trace (docs/observability.md). The headers are what the API's
 * registered propagator writes: `traceparent` and `tracestate` with the W3C
 * one. Edge-safe.
 */
import type { EnvLike } from '../env.ts'
import { importOptional, OTEL_API } from './optional-import.ts'

/** The part of `@opentelemetry/api` this file uses. */
interface PropagationApi {
  context: { active(): unknown }
  propagation: { inject(context: unknown, carrier: Record<string, string>): void }
}

// On globalThis under a registered symbol, so that two copies of svc in one
// process (a bundle and the source, say) agree, as the active runtime does.
const KEY: unique symbol = Symbol.for('svc.telemetry.otelApi')

type Holder = { [KEY]?: PropagationApi }

/**
 * Makes `api` the one the trace headers are written with: `otelTelemetry(api)`
 * calls it, so a process that hands svc its API (a worker's entry, say)
 * propagates through that very copy.
 */
export function useOtelApiForRequests(api: PropagationApi): void {
  ;(globalThis as Holder)[KEY] = api
}

/**
 * The headers that carry the active context: through the API `otelTelemetry`
 * was made with, else the `@opentelemetry/api` the app has installed (Node);
 * none with `SVC_TELEMETRY=off`, without the API, or with no propagator or
 * active span.
 */
export async function traceHeaders(env: EnvLike): Promise<Record<string, string>> {
  // The switch the Node server reads too (`svcjs/node`'s TELEMETRY_ENV).
  if (env.SVC_TELEMETRY === 'off') return {}
  // Read before any await: the caller's active context is the one to send.
  const registered = (globalThis as Holder)[KEY]
  if (registered !== undefined) return inject(registered, registered.context.active())
  const api = await importOptional<Partial<PropagationApi>>(OTEL_API)
  if (api?.propagation === undefined || api.context === undefined) return {}
  return inject(api as PropagationApi, api.context.active())
}

function inject(api: PropagationApi, context: unknown): Record<string, string> {
  const headers: Record<string, string> = {}
  // The API's default setter writes `carrier[key] = value`.
  api.propagation.inject(context, headers)
  return headers
}
