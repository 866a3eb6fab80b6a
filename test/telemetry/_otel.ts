/**
 * The OpenTelemetry SDK as an app registers it, with in-memory exporters a
 * test reads: spans, metrics (collected on demand) and log records.
 */
import { context, logs, metrics, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics'
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'

/** A reader whose metrics the test collects when it asks. */
class OnDemandReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

export interface TestSdk {
  spans(): ReadableSpan[]
  metrics(): Promise<ResourceMetrics>
  logs: InMemoryLogRecordExporter
  shutdown(): Promise<void>
}

/** Registers the SDK globally, as `NodeSDK.start()` would. */
export function registerTestSdk(): TestSdk {
  const spanExporter = new InMemorySpanExporter()
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spanExporter })] })
  const reader = new OnDemandReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const logExporter = new InMemoryLogRecordExporter()
  const loggerProvider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logExporter })] })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  trace.setGlobalTracerProvider(tracerProvider)
  metrics.setGlobalMeterProvider(meterProvider)
  logs.setGlobalLoggerProvider(loggerProvider)
  return {
    spans: () => spanExporter.getFinishedSpans(),
    metrics: async () => (await reader.collect()).resourceMetrics,
    logs: logExporter,
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown(), loggerProvider.shutdown()])
      trace.disable()
      metrics.disable()
      logs.disable()
      context.disable()
      propagation.disable()
    },
  }
}

/** The sum of a counter's points whose attributes hold every value of `where`. */
export function counted(resource: ResourceMetrics, name: string, where: Record<string, unknown>): number {
  let total = 0
  for (const scope of resource.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue
      for (const point of metric.dataPoints) {
        if (Object.entries(where).every(([key, value]) => point.attributes[key] === value)) total += point.value as number
      }
    }
  }
  return total
}

/** The points of metric `name`. */
export function points(resource: ResourceMetrics, name: string): { attributes: Record<string, unknown>; value: unknown }[] {
  return resource.scopeMetrics.flatMap((scope) =>
    scope.metrics.filter((metric) => metric.descriptor.name === name).flatMap((metric) => metric.dataPoints as never[]),
  )
}
