/**
 * One trace per run in the tasks Durable Object, in real workerd: an app
 * built with `svc build --target cloudflare` registers the OpenTelemetry
 * SDK in its `src/instrumentation.ts`, with an exporter that posts each
 * span to this test's receiver, and depends on `@opentelemetry/api`, so the
 * entry hands svc the API. A request's span in
 * the worker is the parent of the run's creation in the object, each
 * execution of the run continues that trace, before a sleep and after it,
 * when the object's alarm wakes it in a new workerd on the same storage,
 * and steps are spans of their execution. No
 * context manager: workerd has none without nodejs_compat, so the trace
 * travels with the run, not with the active context.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import { ROOT } from '../docs/_markdown.ts'
import { until } from '../_helpers.ts'
import { startBuiltWorker } from './_wrangler.ts'

const SECRET = 'otel-secret-0123456789abcdef012345678'

interface ReceivedSpan {
  name: string
  traceId: string
  spanId: string
  parent?: string
  attributes: Record<string, unknown>
}

/**
 * The app: a task, its dependency on the OpenTelemetry API, and its
 * `src/instrumentation.ts`, which `svc build` imports first. Its exporter
 * posts each span to `url`.
 */
const files = (url: string): Record<string, string> => ({
  'package.json': JSON.stringify({ type: 'module', dependencies: { '@opentelemetry/api': '*', svcjs: '*' } }),
  'src/instrumentation.ts': `
import { propagation, trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { type ReadableSpan, SimpleSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace'

const exporter: SpanExporter = {
  export(spans: ReadableSpan[], done) {
    const body = spans.map((s) => ({
      name: s.name,
      traceId: s.spanContext().traceId,
      spanId: s.spanContext().spanId,
      parent: s.parentSpanContext?.spanId,
      attributes: s.attributes,
    }))
    fetch(${JSON.stringify(url)}, { method: 'POST', body: JSON.stringify(body) }).then(() => done({ code: 0 }), () => done({ code: 1 }))
  },
  shutdown: () => Promise.resolve(),
}
propagation.setGlobalPropagator(new W3CTraceContextPropagator())
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }))
`,
  'src/api/report.ts': `
import type { TaskContext } from 'svcjs'
export const route = { kind: 'task' } as const
export async function POST(ctx: TaskContext) {
  const rows = await ctx.step.run('query', () => 42)
  await ctx.step.sleep('cool-down', 1)
  return ctx.step.run('render', () => 'rows: ' + rows)
}
`,
})

const received: ReceivedSpan[] = []
let receiver: Server
let root: string
let out: string
let persist: string
let mf: Miniflare

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      received.push(...(JSON.parse(body) as ReceivedSpan[]))
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  // Inside the repository, so that the app's imports resolve from its node_modules.
  root = join(ROOT, '.tmp', `otel-cf-app-${process.pid}`)
  for (const [file, contents] of Object.entries(files(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/spans`))) {
    mkdirSync(dirname(join(root, file)), { recursive: true })
    writeFileSync(join(root, file), contents)
  }
  await buildApp({ root, target: 'cloudflare' })
  out = join(root, '.output/cloudflare')
  persist = mkdtempSync(join(tmpdir(), 'svc-cf-otel-'))
  mf = await start()
})
afterAll(async () => {
  await mf?.dispose()
  receiver?.close()
  rmSync(persist, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

const start = (): Promise<Miniflare> => startBuiltWorker(out, { SVC_TASK_SECRET: SECRET }, persist)

describe('OpenTelemetry in the tasks Durable Object', () => {
  it("continues the request's trace through the run's executions in the object, across a restart that its alarm ends", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c'
    const res = await mf.dispatchFetch('http://worker/__tasks/report', {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: '{}',
    })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    const ofRun = () => received.filter((span) => span.attributes['svc.run.id'] === id)
    // Suspended on the sleep: this workerd goes, and a new one on the same storage wakes the object by its alarm.
    await until(() => ofRun().some((span) => span.name === 'process report'), 15_000)
    await mf.dispose()
    mf = await start()
    await until(() => ofRun().filter((span) => span.name === 'process report').length === 2, 15_000)
    const request = received.find((span) => span.name === 'POST /__tasks/{name}' && span.traceId === traceId)!
    expect(request.parent).toBe('b7ad6b7169203331')
    const created = ofRun().find((span) => span.name === 'create report')!
    expect(created.traceId).toBe(traceId)
    expect(created.parent).toBe(request.spanId)
    const executions = ofRun().filter((span) => span.name === 'process report')
    expect(executions.map((span) => span.attributes['svc.execution.outcome'])).toEqual(['suspended', 'completed'])
    for (const execution of executions) {
      expect(execution.traceId).toBe(traceId)
      expect(execution.parent).toBe(created.spanId)
    }
    const steps = ofRun().filter((span) => span.name.startsWith('step '))
    expect(steps.map((span) => [span.name, span.parent])).toEqual([
      ['step query', executions[0].spanId],
      ['step render', executions[1].spanId],
    ])
  })
})
