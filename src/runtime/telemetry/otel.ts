/**
 * `Telemetry` on the OpenTelemetry API (docs/observability.md). It is given
 * the API module rather than importing it, so the core never depends on it:
 * the Node server loads it when it is installed (`svcjs/node`'s
 * `loadTelemetry`), and a worker's entry passes it when the app depends on
 * it. With no SDK registered, the API's no-op tracer, meter and logger
 * answer every call. Edge-safe.
 *
 * Spans: a server span per request (`http.*`, `url.*`, `http.route`; the
 * query with its secrets redacted, `redact-query.ts`); a producer span
 * when a run is created, whose context the run keeps (`RunRecord.trace`);
 * a consumer span per execution of its handler, a child of it, with an
 * event per replayed step and one for a suspension; a span per step that
 * executes. Metrics and log records are below; log records go through
 * the Logs API of either SDK line (`logs.ts`).
 */
import type * as Api from '@opentelemetry/api'
import type { RunStatus, RunTrace } from '../types.ts'
import { errorMessage } from '../errors.ts'
import type { ExecutionEnd, ExecutionSpan, RequestSpan, StepSpan, Telemetry } from './types.ts'
import { redactQuery } from './redact-query.ts'
import { formatTraceparent, parseTraceparent } from './traceparent.ts'
import { logEmitter, logRecord, type LogsApiLike, type LogsModuleLike } from './logs.ts'
import { useOtelApiForRequests } from './outgoing.ts'
import { STORE_WRITES } from './store-operations.ts'

/**
 * The parts svc uses of the OpenTelemetry API module, `import * as api from '@opentelemetry/api'`:
 * 1.10 or later (SDK 3.x), or 1.9 (SDK 2.x), which has no `logs`.
 */
export type OtelApi = Pick<
  typeof Api,
  | 'trace'
  | 'context'
  | 'propagation'
  | 'metrics'
  | 'SpanKind'
  | 'SpanStatusCode'
  | 'ROOT_CONTEXT'
  | 'ProxyTracerProvider'
  | 'createNoopMeter'
  | 'createTraceState'
  | 'isSpanContextValid'
> & { logs?: LogsApiLike }

export interface OtelTelemetryOptions {
  /**
   * `@opentelemetry/api-logs` (`import * as logsApi from '@opentelemetry/api-logs'`),
   * for log records on an API without `logs` (before 1.10, the SDK 2.x line).
   * Note: on Node, svc imports the app's copy itself when this is absent;
   * a worker's bundle cannot, so pass it there.
   * @default api.logs, else @opentelemetry/api-logs imported at the first log record
   */
  logsApi?: LogsModuleLike
}

/** The instrumentation scope svc's spans, metrics and logs carry. */
export const SCOPE = 'svc'

/** The instruments of svc's metrics, made on a meter of a registered SDK. */
interface Instruments {
  created: Api.Counter
  started: Api.Counter
  finished: Api.Counter
  execution: Api.Histogram
  step: Api.Histogram
  queueWait: Api.Histogram
  storeWrite: Api.Histogram
}

function instruments(meter: Api.Meter, counters: readonly RunCounter[]): Instruments {
  const seconds = (name: string, description: string) => meter.createHistogram(name, { description, unit: 's' })
  observeRuns(meter, counters)
  return {
    created: meter.createCounter('svc.runs.created', { description: 'Runs created, by task and trigger' }),
    started: meter.createCounter('svc.runs.started', { description: 'Runs whose first attempt began, by task' }),
    finished: meter.createCounter('svc.runs.finished', {
      description: 'Runs that completed, failed or were cancelled, by task and status',
    }),
    execution: seconds(
      'svc.execution.duration',
      "Executions of a run's handler (an attempt, or its replay after a resume), by task and outcome",
    ),
    step: seconds('svc.step.duration', 'Steps that executed, by task and kind'),
    queueWait: seconds('svc.run.queue_wait', 'From the creation of a run to the start of its first attempt, by task'),
    storeWrite: seconds('svc.store.write.duration', 'Writes of the run store, by operation'),
  }
}

type RunCounter = (status: RunStatus) => Promise<{ taskName: string; count: number }[]>

/**
 * The gauges of the runs queued and running, by task, read whenever metrics
 * are collected from the store of the runtime that registered last and is
 * still open: a server that reloads its tasks has two runtimes on one store
 * for a while, which must not count its runs twice.
 */
function observeRuns(meter: Api.Meter, counters: readonly RunCounter[]): void {
  const gauge = (status: RunStatus, name: string, description: string) =>
    meter.createObservableGauge(name, { description }).addCallback(async (result) => {
      const count = counters.at(-1)
      if (count === undefined) return
      for (const { taskName, count: n } of await count(status)) result.observe(n, { 'svc.task.name': taskName })
    })
  gauge('queued', 'svc.runs.queued', 'Runs waiting for a slot of their task (concurrency, rate limit), by task')
  gauge('running', 'svc.runs.running', 'Runs running, by task')
}

/**
 * svc's `Telemetry` on `api`. The requests the task client sends to a task
 * server (`enqueue()` where no runtime runs) carry the active context
 * through this `api` from now on (`outgoing.ts`).
 */
export function otelTelemetry(api: OtelApi, options: OtelTelemetryOptions = {}): Telemetry {
  const { trace, context, propagation, SpanKind, SpanStatusCode, ROOT_CONTEXT } = api
  const tracer = trace.getTracer(SCOPE)
  const emitLog = logEmitter(SCOPE, api.logs, options.logsApi)
  useOtelApiForRequests(api)

  // Without an SDK, every call of the API is a no-op that still costs:
  // svc asks first, and does nothing. Both are asked on every call, so an
  // SDK registered after svc started is used from then on.
  const noTracing = new api.ProxyTracerProvider().getDelegate()
  const tracing = (): boolean => {
    const provider = trace.getTracerProvider() as Partial<Api.ProxyTracerProvider>
    return (provider.getDelegate?.() ?? provider) !== noTracing
  }
  const noMeter = api.createNoopMeter()
  let meterProvider: Api.MeterProvider | undefined
  let measured: Instruments | undefined
  const counters: RunCounter[] = []
  const metrics = (): Instruments | undefined => {
    const provider = api.metrics.getMeterProvider()
    if (provider !== meterProvider) {
      meterProvider = provider
      const meter = provider.getMeter(SCOPE)
      measured = meter === noMeter ? undefined : instruments(meter, counters)
    }
    return measured
  }

  /** The context whose active span is the one `trace` names, or the root one. */
  const parentContext = (run: RunTrace | undefined): Api.Context => {
    const spanContext = run === undefined ? undefined : parseTraceparent(run.traceparent)
    if (spanContext === undefined) return ROOT_CONTEXT
    if (run?.tracestate) spanContext.traceState = api.createTraceState(run.tracestate)
    return trace.setSpanContext(ROOT_CONTEXT, spanContext)
  }

  /** The trace context `span` hands on, when it is a valid one. */
  const traceOf = (span: Api.Span): RunTrace | undefined => {
    const spanContext = span.spanContext()
    if (!api.isSpanContextValid(spanContext)) return undefined
    const state = spanContext.traceState?.serialize()
    return state ? { traceparent: formatTraceparent(spanContext), tracestate: state } : { traceparent: formatTraceparent(spanContext) }
  }

  const failed = (span: Api.Span, error: unknown): void => {
    if (error instanceof Error) span.recordException(error)
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) })
  }

  return {
    request(request, serve) {
      if (!tracing()) return serve(undefined)
      const url = new URL(request.url)
      const method = request.method
      const parent = propagation.extract(ROOT_CONTEXT, request.headers, HEADERS)
      const attributes: Api.Attributes = {
        'http.request.method': method,
        'url.path': url.pathname,
        'url.scheme': url.protocol.slice(0, -1),
        'server.address': url.hostname,
      }
      if (url.search.length > 1) attributes['url.query'] = redactQuery(url.search.slice(1))
      if (url.port) attributes['server.port'] = Number(url.port)
      const agent = request.headers.get('user-agent')
      if (agent !== null) attributes['user_agent.original'] = agent
      const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent)
      const handle: RequestSpan = {
        route(pattern) {
          span.setAttribute('http.route', pattern)
          span.updateName(`${method} ${pattern}`)
        },
        trace: () => traceOf(span),
      }
      const done = (response: Response): Response => {
        span.setAttribute('http.response.status_code', response.status)
        if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
        span.end()
        return response
      }
      let result: Response | Promise<Response>
      try {
        result = context.with(trace.setSpan(parent, span), () => serve(handle))
      } catch (error) {
        failed(span, error)
        span.end()
        throw error
      }
      if (!(result instanceof Promise)) return done(result)
      return result.then(done, (error: unknown) => {
        failed(span, error)
        span.end()
        throw error
      })
    },

    runCreated(run, parent) {
      metrics()?.created.add(1, { 'svc.task.name': run.taskName, 'svc.run.trigger': run.trigger })
      if (!tracing()) return undefined
      const base = parent === undefined ? context.active() : parentContext(parent)
      const span = tracer.startSpan(
        `create ${run.taskName}`,
        {
          kind: SpanKind.PRODUCER,
          attributes: {
            'messaging.system': SCOPE,
            'messaging.operation.type': 'create',
            'messaging.destination.name': run.taskName,
            'messaging.message.id': run.id,
            'svc.task.name': run.taskName,
            'svc.run.id': run.id,
            'svc.run.trigger': run.trigger,
          },
        },
        base,
      )
      span.end()
      return traceOf(span)
    },

    execution(run, attempt, first) {
      const measure = metrics()
      const traced = tracing()
      if (measure === undefined && !traced) return undefined
      const task = { 'svc.task.name': run.taskName }
      if (first && measure !== undefined) {
        measure.started.add(1, task)
        const wait = Date.now() - Date.parse(run.createdAt)
        if (wait >= 0) measure.queueWait.record(wait / 1000, task)
      }
      const began = Date.now()
      const span = traced
        ? tracer.startSpan(
            `process ${run.taskName}`,
            {
              kind: SpanKind.CONSUMER,
              attributes: {
                'messaging.system': SCOPE,
                'messaging.operation.type': 'process',
                'messaging.destination.name': run.taskName,
                'messaging.message.id': run.id,
                'svc.task.name': run.taskName,
                'svc.run.id': run.id,
                'svc.run.attempt': attempt,
                'svc.run.trigger': run.trigger,
              },
            },
            parentContext(run.trace),
          )
        : undefined
      const active = span === undefined ? undefined : trace.setSpan(ROOT_CONTEXT, span)
      const execution: ExecutionSpan = {
        run: (fn) => (active === undefined ? fn() : context.with(active, fn)),
        step(key, kind) {
          const stepBegan = Date.now()
          const stepSpan =
            active === undefined
              ? undefined
              : tracer.startSpan(
                  `step ${key}`,
                  { kind: SpanKind.INTERNAL, attributes: { 'svc.step.key': key, 'svc.step.kind': kind, 'svc.run.id': run.id } },
                  active,
                )
          const stepActive = stepSpan === undefined ? undefined : trace.setSpan(ROOT_CONTEXT, stepSpan)
          const step: StepSpan = {
            run: (fn) => (stepActive === undefined ? fn() : context.with(stepActive, fn)),
            end(error) {
              if (stepSpan !== undefined) {
                if (error !== undefined) failed(stepSpan, error)
                stepSpan.end()
              }
              measure?.step.record((Date.now() - stepBegan) / 1000, { ...task, 'svc.step.kind': kind })
            },
          }
          return step
        },
        replayed(key, kind) {
          span?.addEvent('step replayed', kind === undefined ? { 'svc.step.key': key } : { 'svc.step.key': key, 'svc.step.kind': kind })
        },
        trace: () => (span === undefined ? undefined : traceOf(span)),
        end(end: ExecutionEnd) {
          if (span !== undefined) {
            if (end.kind === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: end.error })
            else if (end.kind === 'suspended') {
              span.addEvent('run suspended', { 'svc.step.key': end.stepKey, 'svc.waitpoint.type': end.waitpoint.type })
            } else if (end.kind === 'stopped') span.addEvent('execution stopped', { 'svc.reason': end.why })
            span.setAttribute('svc.execution.outcome', end.kind)
            span.end()
          }
          measure?.execution.record((Date.now() - began) / 1000, { ...task, 'svc.execution.outcome': end.kind })
        },
      }
      return execution
    },

    runFinished(run) {
      metrics()?.finished.add(1, { 'svc.task.name': run.taskName, 'svc.run.status': run.status })
    },

    log(taskName, runId, entry) {
      emitLog(logRecord(taskName, runId, entry, context.active()))
    },

    store(store) {
      // Timed only when a meter provider is registered as the store is made: a
      // wrapper costs every store call, and the store is made once.
      const measure = metrics()
      if (measure === undefined) return store
      // Methods are called on the store itself (its private fields), bound once each.
      const bound = new Map<string | symbol, unknown>()
      return new Proxy(store, {
        get(target, key) {
          const value: unknown = Reflect.get(target, key)
          if (typeof value !== 'function') return value
          let method = bound.get(key)
          if (method !== undefined) return method
          if (typeof key === 'string' && STORE_WRITES.has(key)) {
            const attributes = { 'svc.store.operation': key }
            method = (...args: unknown[]) => {
              const began = performance.now()
              const record = () => measure.storeWrite.record((performance.now() - began) / 1000, attributes)
              const result: unknown = value.apply(target, args)
              if (result instanceof Promise) return result.finally(record)
              record()
              return result
            }
          } else method = value.bind(target)
          bound.set(key, method)
          return method
        },
      })
    },

    observeRuns(count) {
      counters.push(count)
      return () => {
        const index = counters.indexOf(count)
        if (index !== -1) counters.splice(index, 1)
      }
    },
  }
}

/** Request headers as the propagator reads them. */
const HEADERS: Api.TextMapGetter<Headers> = {
  keys: (headers) => {
    const names: string[] = []
    headers.forEach((_value, name) => {
      names.push(name)
    })
    return names
  },
  get: (headers, key) => headers.get(key) ?? undefined,
}
