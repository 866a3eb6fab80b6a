/**
 * The cost of tracing, for `bench:tasks --only telemetry`: the same runs
 * without telemetry, with the OpenTelemetry API and no SDK registered, and
 * with the SDK registered and exporters that drop what they are handed; and
 * where the time of the last goes, from a CPU profile.
 */
import { Session } from 'node:inspector/promises'
import * as api from '@opentelemetry/api'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { type ReadableSpan, SimpleSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace'

/** An exporter that drops every span at once. */
const dropping: SpanExporter = {
  export(_spans: ReadableSpan[], done) {
    done({ code: 0 })
  },
  shutdown: () => Promise.resolve(),
}

class NoReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** Registers the SDK, with a span processor per ended span (as the docs' simple setup) and a meter whose metrics nobody reads. */
export function registerDroppingSdk(): () => Promise<void> {
  const tracer = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: dropping })] })
  const meter = new MeterProvider({ readers: [new NoReader()] })
  api.trace.setGlobalTracerProvider(tracer)
  api.metrics.setGlobalMeterProvider(meter)
  return async () => {
    await Promise.all([tracer.shutdown(), meter.shutdown()])
    api.trace.disable()
    api.metrics.disable()
  }
}

/** Runs `fn` under the CPU profiler and returns the `top` functions by self time, as `[share, name (file)]`. */
export async function profileOf(fn: () => Promise<unknown>, top = 12): Promise<[number, string][]> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  await fn()
  const { profile } = await session.post('Profiler.stop')
  session.disconnect()
  const self = new Map<string, number>()
  const total = profile.samples?.length ?? 0
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  for (const id of profile.samples ?? []) {
    const frame = byId.get(id)!.callFrame
    const file = frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/(src|bench)\//, '$1/')
    const name = `${frame.functionName || '(anonymous)'} ${file ? `(${file})` : ''}`.trim()
    self.set(name, (self.get(name) ?? 0) + 1)
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, samples]) => [samples / total, name])
}
