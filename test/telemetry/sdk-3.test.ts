// The OpenTelemetry contract (_sdk-lines.ts) on the SDK 3.x line: @opentelemetry/api 1.10, whose `logs` emits log records.
import * as api from '@opentelemetry/api'
import { sdkLineContract } from './_sdk-lines.ts'
import { registerTestSdk } from './_otel.ts'

sdkLineContract({
  name: 'SDK 3.x (@opentelemetry/api 1.10)',
  api,
  options: [{ name: 'log records through api.logs' }],
  register() {
    const sdk = registerTestSdk()
    const tracer = api.trace.getTracer('caller')
    return {
      spans: () => sdk.spans(),
      logs: () => sdk.logs.getFinishedLogRecords(),
      inSpan: (fn) =>
        tracer.startActiveSpan('caller', async (span) => {
          try {
            return { traceId: span.spanContext().traceId, result: await fn() }
          } finally {
            span.end()
          }
        }),
      shutdown: () => sdk.shutdown(),
    }
  },
})
