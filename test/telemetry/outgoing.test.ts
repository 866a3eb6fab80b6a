// The requests the task client sends to a task server, from a process with
// no task runtime (`SVC_TASK_URL`), carry the caller's trace context. No
// otelTelemetry() is made in this file, so the client finds the app's
// @opentelemetry/api itself, as a plain Node process that only enqueues does.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { context, createTraceState, trace } from '@opentelemetry/api'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cancelRun, completeToken, enqueue, enqueueMany, sendEvent } from '../../src/index.ts'
import { registerTestSdk, type TestSdk } from './_otel.ts'

let sdk: TestSdk
let server: Server
const seen: { path: string; headers: IncomingHttpHeaders }[] = []

// A task server that answers each endpoint as svc's does.
const ANSWERS: [RegExp, number, unknown][] = [
  [/^\/__tasks\/[^/]+\/batch$/, 202, { runs: [{ ok: true, id: 'r2', status: 'running' }] }],
  [/^\/__tasks\/tokens\//, 200, { ok: true, status: 'completed' }],
  [/^\/__tasks\/runs\/[^/]+\/cancel$/, 200, { id: 'r1', status: 'cancelled' }],
  [/^\/__tasks\/[^/]+$/, 202, { id: 'r1', status: 'running' }],
  [/^\/__events$/, 202, { events: [{ id: 'e1', name: 'order.paid', runs: [] }] }],
]

beforeAll(async () => {
  sdk = registerTestSdk()
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers })
    req.resume()
    req.on('end', () => {
      const [, status, body] = ANSWERS.find(([path]) => path.test(req.url ?? '')) ?? [/./, 404, { code: 'NOT_FOUND' }]
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  vi.stubEnv('SVC_TASK_URL', `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  vi.stubEnv('SVC_TASK_SECRET', 'outgoing-test-secret')
})
afterAll(async () => {
  vi.unstubAllEnvs()
  await new Promise((resolve) => server.close(resolve))
  await sdk.shutdown()
})

const tracer = () => trace.getTracer('caller')

/** Every call of the task client, one request each. */
async function callAll(): Promise<void> {
  await enqueue('jobs.work', { n: 1 })
  await enqueueMany('jobs.work', [{ n: 2 }])
  await completeToken('r1:t', { ok: true })
  await cancelRun('r1')
  await sendEvent('order.paid', { n: 3 })
}

describe('trace context on requests to the task server', () => {
  it('enqueue(), enqueueMany(), completeToken(), cancelRun() and sendEvent() send the active span as traceparent', async () => {
    seen.length = 0
    const ids = await tracer().startActiveSpan('caller', async (span) => {
      await callAll()
      span.end()
      return span.spanContext()
    })
    expect(seen.map((request) => request.path)).toEqual([
      '/__tasks/jobs.work',
      '/__tasks/jobs.work/batch',
      '/__tasks/tokens/r1%3At',
      '/__tasks/runs/r1/cancel',
      '/__events',
    ])
    for (const { headers } of seen) expect(headers.traceparent).toBe(`00-${ids.traceId}-${ids.spanId}-01`)
  })

  it("sends the span's tracestate too", async () => {
    seen.length = 0
    const parent = trace.setSpanContext(context.active(), {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
      traceState: createTraceState('vendor=abc'),
    })
    await context.with(parent, () =>
      tracer().startActiveSpan('caller', async (span) => {
        await enqueue('jobs.work', {})
        span.end()
      }),
    )
    expect(seen[0].headers.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/)
    expect(seen[0].headers.tracestate).toBe('vendor=abc')
  })

  it('sends none outside a span, or with SVC_TELEMETRY=off', async () => {
    seen.length = 0
    await enqueue('jobs.work', {})
    vi.stubEnv('SVC_TELEMETRY', 'off')
    try {
      await tracer().startActiveSpan('caller', async (span) => {
        await callAll()
        span.end()
      })
    } finally {
      vi.stubEnv('SVC_TELEMETRY', undefined)
    }
    expect(seen.length).toBe(6)
    for (const { headers } of seen) expect(headers.traceparent).toBeUndefined()
  })
})
