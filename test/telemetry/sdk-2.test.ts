// The OpenTelemetry contract (_sdk-lines.ts) on the SDK 2.x line: @opentelemetry/api 1.9, which has no
// `logs`, with @opentelemetry/api-logs, handed to otelTelemetry or imported by svc itself.
import { api, apiLogs, contextAsyncHooks, core, sdkLogs, sdkTrace } from 'svc-test-otel-sdk-2'
import type { OtelApi } from '../../src/index.ts'
import { sdkLineContract } from './_sdk-lines.ts'

sdkLineContract({
  name: 'SDK 2.x (@opentelemetry/api 1.9, @opentelemetry/api-logs)',
  // Its own copy of the API: the same shape, but classes of another copy's types.
  api: api as unknown as OtelApi,
  options: [
    { name: 'log records through the logsApi option', options: { logsApi: apiLogs } },
    { name: 'log records through @opentelemetry/api-logs, imported' },
  ],
  register() {
    const spans = new sdkTrace.InMemorySpanExporter()
    const tracerProvider = new sdkTrace.BasicTracerProvider({ spanProcessors: [new sdkTrace.SimpleSpanProcessor(spans)] })
    const logs = new sdkLogs.InMemoryLogRecordExporter()
    const loggerProvider = new sdkLogs.LoggerProvider({ processors: [new sdkLogs.SimpleLogRecordProcessor({ exporter: logs })] })
    api.context.setGlobalContextManager(new contextAsyncHooks.AsyncLocalStorageContextManager().enable())
    api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator())
    api.trace.setGlobalTracerProvider(tracerProvider)
    apiLogs.logs.setGlobalLoggerProvider(loggerProvider)
    const tracer = api.trace.getTracer('caller')
    return {
      spans: () => spans.getFinishedSpans(),
      logs: () => logs.getFinishedLogRecords() as never,
      inSpan: (fn) =>
        tracer.startActiveSpan('caller', async (span) => {
          try {
            return { traceId: span.spanContext().traceId, result: await fn() }
          } finally {
            span.end()
          }
        }),
      async shutdown() {
        await Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown()])
        api.trace.disable()
        apiLogs.logs.disable()
        api.context.disable()
        api.propagation.disable()
      },
    }
  },
})
