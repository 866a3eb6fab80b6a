/**
 * One contract, run on both OpenTelemetry SDK lines an app may be on: 3.x
 * (`@opentelemetry/api` 1.10, whose `logs` emits log records) in
 * sdk-3.test.ts, and 2.x (`@opentelemetry/api` 1.9 with
 * `@opentelemetry/api-logs`) in sdk-2.test.ts. Each file registers one line,
 * as an app does: two lines cannot share one process's OpenTelemetry globals.
 *
 * The contract: admin requests' server spans are named by their route
 * pattern, with `http.route`; a run started by `enqueue()` over HTTP, from a
 * process without a task runtime, continues the caller's trace; `ctx.log`
 * entries are log records in the run's trace.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { enqueue, otelTelemetry, type OtelApi, type OtelTelemetryOptions, type RunRecord, setActiveTaskRuntime } from '../../src/index.ts'
import { startSvcServer, type SvcServer } from '../../src/node.ts'
import { recordingLogger, until } from '../_helpers.ts'
import { task } from '../tasks/_helpers.ts'

/** What the contract reads of a finished span, on either line. */
export interface SpanLike {
  name: string
  kind: number
  attributes: Record<string, unknown>
  spanContext(): { traceId: string; spanId: string }
}

/** What the contract reads of an emitted log record, on either line. */
export interface LogLike {
  body?: unknown
  severityText?: string
  attributes: Record<string, unknown>
  spanContext?: { traceId: string }
}

/** One SDK line, registered globally. */
export interface RegisteredSdk {
  spans(): SpanLike[]
  logs(): LogLike[]
  /** Calls `fn` inside an active span of the caller's own: the trace id and what `fn` returned. */
  inSpan<T>(fn: () => Promise<T>): Promise<{ traceId: string; result: T }>
  shutdown(): Promise<void>
}

export interface SdkLine {
  name: string
  api: OtelApi
  /** The `otelTelemetry` options of each case the contract runs. */
  options: { name: string; options?: OtelTelemetryOptions }[]
  register(): RegisteredSdk
}

const SECRET = 'otel-lines-task-secret-0123456789abcdef'
const auth = { authorization: `Bearer ${SECRET}` }
const SERVER = 1 // SpanKind.SERVER on both lines

const routes = [
  task('jobs.logged', async (ctx) => {
    ctx.log.info('starting', { order: 7 })
    return ctx.step.run('a', () => {
      ctx.log.warn('inside a')
      return 1
    })
  }),
  task('jobs.wait', async (ctx) => ctx.step.waitForToken('t', { timeoutSeconds: 60 })),
]

export function sdkLineContract(line: SdkLine): void {
  let sdk: RegisteredSdk
  beforeAll(() => {
    sdk = line.register()
  })
  afterAll(() => sdk.shutdown())

  const servers: SvcServer[] = []
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close()
  })

  for (const { name, options } of line.options) {
    describe(`${line.name}, ${name}`, () => {
      async function serve(): Promise<SvcServer> {
        const server = await startSvcServer({
          apiRoutes: routes,
          pages: [],
          port: 0,
          env: { SVC_TASK_SECRET: SECRET },
          logger: recordingLogger(),
          installSignalHandlers: false,
          telemetry: otelTelemetry(line.api, options),
        })
        servers.push(server)
        return server
      }

      const post = (server: SvcServer, path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })

      const finished = (server: SvcServer, id: string) =>
        until(async () => {
          const run = (await (await fetch(`${server.url}/__tasks/${id}`, { headers: auth })).json()) as RunRecord
          return run.status === 'completed' || run.status === 'failed' ? run : undefined
        }, 10_000)

      const serverSpan = (path: string, method = 'POST', traceId?: string) =>
        until(() =>
          sdk
            .spans()
            .find(
              (s) =>
                s.kind === SERVER &&
                s.attributes['url.path'] === path &&
                s.attributes['http.request.method'] === method &&
                (traceId === undefined || s.spanContext().traceId === traceId),
            ),
        )

      it('names the server spans of the admin surface by pattern, with http.route, never by a name or an id', async () => {
        const server = await serve()
        const { id } = (await (await post(server, '/__tasks/jobs.wait', {})).json()) as { id: string }
        expect((await post(server, '/__tasks/jobs.logged/batch', [{}])).status).toBe(202)
        expect((await post(server, '/__events/order.paid', { n: 1 })).status).toBe(202)
        expect((await fetch(`${server.url}/__tasks/runs/${id}/logs`, { headers: auth })).status).toBe(200)
        expect((await fetch(`${server.url}/__tasks/${id}`, { headers: auth })).status).toBe(200)
        // Token ids are `<run id>:<step key>`: the token of the suspended run's step `t`.
        await until(
          async () => ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: auth })).json()) as RunRecord).status === 'suspended',
        )
        expect((await post(server, `/__tasks/tokens/${id}:t`, { ok: true })).status).toBe(200)
        const expected: [method: string, path: string, pattern: string][] = [
          ['POST', '/__tasks/jobs.wait', '/__tasks/{name}'],
          ['POST', '/__tasks/jobs.logged/batch', '/__tasks/{name}/batch'],
          ['POST', '/__events/order.paid', '/__events/{name}'],
          ['GET', `/__tasks/runs/${id}/logs`, '/__tasks/runs/{id}/logs'],
          ['GET', `/__tasks/${id}`, '/__tasks/{id}'],
          ['POST', `/__tasks/tokens/${id}:t`, '/__tasks/tokens/{id}'],
        ]
        for (const [method, path, pattern] of expected) {
          const span = await serverSpan(path, method)
          expect(span.name).toBe(`${method} ${pattern}`)
          expect(span.attributes['http.route']).toBe(pattern)
        }
      })

      it("a run started by enqueue() over HTTP, from a process with no task runtime, continues the caller's trace", async () => {
        const server = await serve()
        // What another process sees: no task runtime, the task server's address in SVC_TASK_URL.
        setActiveTaskRuntime(null)
        const env = { SVC_TASK_URL: process.env.SVC_TASK_URL, SVC_TASK_SECRET: process.env.SVC_TASK_SECRET }
        process.env.SVC_TASK_URL = server.url
        process.env.SVC_TASK_SECRET = SECRET
        let caller: { traceId: string; result: { runId: string } }
        try {
          caller = await sdk.inSpan(() => enqueue('jobs.logged', {}))
        } finally {
          for (const [key, value] of Object.entries(env)) {
            if (value === undefined) delete process.env[key]
            else process.env[key] = value
          }
        }
        const run = await finished(server, caller.result.runId)
        expect(run.status).toBe('completed')
        expect(run.trace?.traceparent).toContain(`-${caller.traceId}-`)
        // The server span of the request enqueue() sent is in the caller's trace.
        await serverSpan('/__tasks/jobs.logged', 'POST', caller.traceId)
        const executions = sdk.spans().filter((s) => s.attributes['svc.run.id'] === caller.result.runId && s.name === 'process jobs.logged')
        expect(executions.length).toBe(1)
        expect(executions[0].spanContext().traceId).toBe(caller.traceId)
      })

      it("ctx.log entries are log records in the run's trace", async () => {
        const server = await serve()
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
        const res = await fetch(`${server.url}/__tasks/jobs.logged`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json', traceparent },
          body: '{}',
        })
        const { id } = (await res.json()) as { id: string }
        expect((await finished(server, id)).status).toBe('completed')
        const records = await until(() => {
          const found = sdk.logs().filter((r) => r.attributes['svc.run.id'] === id)
          return found.length === 2 ? found : undefined
        })
        expect(records.map((r) => [r.severityText, r.body, r.attributes['svc.step.key']])).toEqual([
          ['INFO', 'starting', undefined],
          ['WARN', 'inside a', 'a'],
        ])
        expect(records[0].attributes.order).toBe(7)
        expect(records.map((r) => r.spanContext?.traceId)).toEqual(['4bf92f3577b34da6a3ce929d0e0e4736', '4bf92f3577b34da6a3ce929d0e0e4736'])
      })
    })
  }
}
