/**
 * The Node server's telemetry (docs/observability.md): OpenTelemetry when
 * `@opentelemetry/api` is installed where svc can import it, else none.
 * The app sets up the SDK the standard way (a `--import` file that starts
 * `NodeSDK`, say); svc only reads the global providers the API hands out,
 * so with no SDK registered its calls are the API's no-ops.
 */
import type { Telemetry } from '../runtime/telemetry/types.ts'
import { type OtelApi, otelTelemetry } from '../runtime/telemetry/otel.ts'

const OTEL_API: string = '@opentelemetry/api'

/** `SVC_TELEMETRY=off` turns it off, as `telemetry: false` does. */
export const TELEMETRY_ENV = 'SVC_TELEMETRY'

/** OpenTelemetry's API as a `Telemetry`, or `undefined` when the API is not installed or `SVC_TELEMETRY` is `off`. */
export async function loadTelemetry(env: Record<string, string | undefined> = process.env): Promise<Telemetry | undefined> {
  if (env[TELEMETRY_ENV] === 'off') return undefined
  let api: OtelApi
  try {
    // A specifier a bundler does not follow: a built server imports the app's
    // own copy when it runs, and bundles none when the app has none.
    api = (await import(OTEL_API)) as OtelApi
  } catch (error) {
    // Not installed: nothing to report to. Anything else (a broken install) is the app's to see.
    if ((error as { code?: unknown })?.code === 'ERR_MODULE_NOT_FOUND') return undefined
    throw error
  }
  return otelTelemetry(api)
}
