// Runs as traces, metrics and log records through the OpenTelemetry API,
// with the real SDK registered as an app registers it: a caller's
// traceparent is the parent of the run's trace, every execution of the run
// (before and after a sleep, across a restart of its SQLite store) and its
// child runs are in that one trace, steps are spans of their execution, and
// the run's ctx.log entries are log records in it.
import * as api from '@opentelemetry/api'
import { SpanKind } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createRunToken, createTaskRuntime, otelTelemetry, type RunRecord, type TaskRuntime } from '../../src/index.ts'
import { startSvcServer, type SvcServer } from '../../src/node.ts'
import { sqliteFiles } from '../node/_sqlite-files.ts'
import { recordingLogger, until } from '../_helpers.ts'
import { task } from '../tasks/_helpers.ts'
import { counted, points, registerTestSdk, type TestSdk } from './_otel.ts'

let sdk: TestSdk
beforeAll(() => {
  sdk = registerTestSdk()
})
afterAll(() => sdk.shutdown())

// Long enough for a production server, which refuses a task secret under 32 bytes.
const SECRET = 'otel-test-task-secret-0123456789abcdef'
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'

const routes = [
  task('jobs.work', async (ctx) => {
    ctx.log.info('starting', { order: 7 })
    const a = await ctx.step.run('a', () => {
      ctx.log.warn('inside a')
      return 1
    })
    await ctx.step.sleep('nap', 0.2)
    const child = await ctx.step.waitForTask('child', 'jobs.child', { n: a })
    return await ctx.step.run('b', () => (child.result as number) + 1)
  }),
  task('jobs.child', async (ctx) => ctx.step.run('double', () => (ctx.input as { n: number }).n * 2)),
  { path: '/api/hello/:name', module: { GET: () => new Response('hi') } },
]

const servers: SvcServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

async function serve(options: Partial<Parameters<typeof startSvcServer>[0]> = {}): Promise<SvcServer> {
  const server = await startSvcServer({
    apiRoutes: routes,
    pages: [],
    port: 0,
    env: { SVC_TASK_SECRET: SECRET },
    logger: recordingLogger(),
    installSignalHandlers: false,
    ...options,
  })
  servers.push(server)
  return server
}

const auth = { authorization: `Bearer ${SECRET}` }

async function finishedRun(server: SvcServer, id: string): Promise<RunRecord> {
  return until(async () => {
    const run = (await (await fetch(`${server.url}/__tasks/${id}`, { headers: auth })).json()) as RunRecord
    return run.status === 'completed' || run.status === 'failed' ? run : undefined
  }, 10_000)
}

const attr = (span: ReadableSpan, key: string) => span.attributes[key]
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
/** Every text a span sends: its name, its attributes' values, its events' names and attributes' values. */
const recorded = (span: ReadableSpan): string[] => [
  span.name,
  ...Object.values(span.attributes).map(String),
  ...span.events.flatMap((event) => [event.name, ...Object.values(event.attributes ?? {}).map(String)]),
]

describe('OpenTelemetry, with the SDK registered', () => {
  it("continues the caller's trace through the run, its executions, its steps and its child run", async () => {
    const server = await serve()
    const res = await fetch(`${server.url}/__tasks/jobs.work`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
      body: '{}',
    })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    const run = await finishedRun(server, id)
    expect(run.status).toBe('completed')
    expect(run.result).toBe(3)
    expect(run.trace?.traceparent).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-01$`))

    const spans = sdk.spans()
    const server_ = spans.find((s) => s.kind === SpanKind.SERVER && attr(s, 'url.path') === '/__tasks/jobs.work')!
    expect(server_.spanContext().traceId).toBe(CALLER_TRACE)
    expect(parentOf(server_)).toBe(CALLER_SPAN)
    expect(attr(server_, 'http.request.method')).toBe('POST')
    expect(attr(server_, 'http.response.status_code')).toBe(202)

    const ofRun = (runId: string) => spans.filter((s) => attr(s, 'svc.run.id') === runId)
    const created = ofRun(id).find((s) => s.kind === SpanKind.PRODUCER)!
    expect(created.name).toBe('create jobs.work')
    expect(parentOf(created)).toBe(server_.spanContext().spanId)
    // The run keeps the context of its creation span.
    expect(run.trace?.traceparent).toBe(`00-${CALLER_TRACE}-${created.spanContext().spanId}-01`)

    // Three executions: to the sleep, to the child wait, to the end; each a child of the creation span.
    const executions = ofRun(id)
      .filter((s) => s.kind === SpanKind.CONSUMER)
      .sort((x, y) => x.startTime[0] - y.startTime[0] || x.startTime[1] - y.startTime[1])
    expect(executions.map((s) => attr(s, 'svc.execution.outcome'))).toEqual(['suspended', 'suspended', 'completed'])
    for (const execution of executions) {
      expect(execution.spanContext().traceId).toBe(CALLER_TRACE)
      expect(parentOf(execution)).toBe(created.spanContext().spanId)
      expect(attr(execution, 'svc.task.name')).toBe('jobs.work')
      expect(attr(execution, 'svc.run.attempt')).toBe(1)
    }
    expect(executions[0].events.map((e) => [e.name, e.attributes?.['svc.step.key']])).toEqual([['run suspended', 'nap']])
    expect(executions[2].events.map((e) => [e.name, e.attributes?.['svc.step.key']])).toEqual([
      ['step replayed', 'a'],
      ['step replayed', 'nap'],
      ['step replayed', 'child'],
    ])
    // Steps that executed are spans of the execution that ran them.
    const steps = ofRun(id).filter((s) => s.kind === SpanKind.INTERNAL)
    expect(steps.map((s) => s.name).sort()).toEqual(['step a', 'step b'])
    expect(parentOf(steps.find((s) => s.name === 'step a')!)).toBe(executions[0].spanContext().spanId)
    expect(parentOf(steps.find((s) => s.name === 'step b')!)).toBe(executions[2].spanContext().spanId)

    // The child run is in the same trace, created under the execution that waited for it.
    const childId = (await (await fetch(`${server.url}/__tasks/runs?task=jobs.child`, { headers: auth })).json()) as {
      runs: { id: string }[]
    }
    const childSpans = ofRun(childId.runs[0].id)
    const childCreated = childSpans.find((s) => s.kind === SpanKind.PRODUCER)!
    expect(childCreated.spanContext().traceId).toBe(CALLER_TRACE)
    expect(parentOf(childCreated)).toBe(executions[1].spanContext().spanId)
    expect(childSpans.filter((s) => s.kind === SpanKind.CONSUMER).every((s) => parentOf(s) === childCreated.spanContext().spanId)).toBe(
      true,
    )

    // ctx.log entries are log records in the run's trace, and kept with the run.
    const records = sdk.logs.getFinishedLogRecords().filter((r) => r.attributes['svc.run.id'] === id)
    expect(records.map((r) => [r.severityText, r.body, r.attributes['svc.step.key']])).toEqual([
      ['INFO', 'starting', undefined],
      ['WARN', 'inside a', 'a'],
    ])
    expect(records[0].attributes.order).toBe(7)
    expect(records.every((r) => r.spanContext?.traceId === CALLER_TRACE)).toBe(true)
    const logs = (await (await fetch(`${server.url}/__tasks/runs/${id}/logs`, { headers: auth })).json()) as {
      entries: { seq: number; message: string; step?: string }[]
    }
    expect(logs.entries.map((e) => [e.seq, e.message, e.step])).toEqual([
      [1, 'starting', undefined],
      [2, 'inside a', 'a'],
    ])

    // Metrics: runs created, started and finished by task; step, execution and store write durations; the gauges.
    const resource = await sdk.metrics()
    expect(counted(resource, 'svc.runs.created', { 'svc.task.name': 'jobs.work', 'svc.run.trigger': 'manual' })).toBe(1)
    expect(counted(resource, 'svc.runs.created', { 'svc.task.name': 'jobs.child', 'svc.run.trigger': 'child' })).toBe(1)
    expect(counted(resource, 'svc.runs.started', { 'svc.task.name': 'jobs.work' })).toBe(1)
    expect(counted(resource, 'svc.runs.finished', { 'svc.task.name': 'jobs.work', 'svc.run.status': 'completed' })).toBe(1)
    expect(counted(resource, 'svc.runs.finished', { 'svc.task.name': 'jobs.child', 'svc.run.status': 'completed' })).toBe(1)
    const stepCount = points(resource, 'svc.step.duration').reduce((n, p) => n + (p.value as { count: number }).count, 0)
    expect(stepCount).toBe(3)
    const executionOutcomes = points(resource, 'svc.execution.duration').map((p) => [
      p.attributes['svc.task.name'],
      p.attributes['svc.execution.outcome'],
      (p.value as { count: number }).count,
    ])
    expect(executionOutcomes).toContainEqual(['jobs.work', 'suspended', 2])
    expect(executionOutcomes).toContainEqual(['jobs.work', 'completed', 1])
    expect(points(resource, 'svc.run.queue_wait').length).toBeGreaterThan(0)
    const writes = points(resource, 'svc.store.write.duration').map((p) => p.attributes['svc.store.operation'])
    expect(writes).toEqual(expect.arrayContaining(['createRun', 'saveStep', 'updateRun']))
  })

  it('reports the runs running and queued, by task, when metrics are collected', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const rt = createTaskRuntime({
      routes: [task('jobs.held', () => held, { route: { concurrency: 1 } })],
      env: {},
      logger: recordingLogger(),
      telemetry: otelTelemetry(api),
    })
    try {
      const runs = [await rt.trigger('jobs.held'), await rt.trigger('jobs.held')]
      const statuses = async () => (await Promise.all(runs.map((run) => rt.getRun(run.id)))).map((run) => run?.status).sort()
      await until(async () => JSON.stringify(await statuses()) === '["queued","running"]')
      const resource = await sdk.metrics()
      const gauge = (name: string) => points(resource, name).filter((p) => p.attributes['svc.task.name'] === 'jobs.held')
      expect(gauge('svc.runs.running').map((p) => p.value)).toEqual([1])
      expect(gauge('svc.runs.queued').map((p) => p.value)).toEqual([1])
    } finally {
      release()
      await rt.close()
    }
  })

  it('names the server span of an API route by its pattern, as http.route', async () => {
    const server = await serve()
    expect(await (await fetch(`${server.url}/api/hello/ada?x=1`)).text()).toBe('hi')
    const span = await until(() => sdk.spans().find((s) => attr(s, 'url.path') === '/api/hello/ada'))
    expect(span.name).toBe('GET /api/hello/:name')
    expect(attr(span, 'http.route')).toBe('/api/hello/:name')
    expect(attr(span, 'url.query')).toBe('x=1')
    expect(attr(span, 'http.response.status_code')).toBe(200)
  })

  it('records the query with the value of token, and of any secret-looking parameter, as REDACTED', async () => {
    const server = await serve()
    expect((await fetch(`${server.url}/api/hello/grace?token=abc&x=1&api_key=k3y`)).status).toBe(200)
    const hello = await until(() => sdk.spans().find((s) => attr(s, 'url.path') === '/api/hello/grace'))
    expect(attr(hello, 'url.query')).toBe('token=REDACTED&x=1&api_key=REDACTED')
    const ofHello = sdk.spans().filter((s) => s.spanContext().traceId === hello.spanContext().traceId)
    for (const secret of ['abc', 'k3y']) expect(ofHello.flatMap(recorded).filter((text) => text.includes(secret))).toEqual([])

    // A run token on the stream of a run, as a browser's EventSource sends it.
    const res = await fetch(`${server.url}/__tasks/jobs.child`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"n":1}',
    })
    const { id } = (await res.json()) as { id: string }
    await finishedRun(server, id)
    const token = await createRunToken(id, { secret: SECRET })
    const stop = new AbortController()
    const stream = await fetch(`${server.url}/__tasks/runs/${id}/stream?token=${token}&x=1`, { signal: stop.signal })
    expect(stream.status).toBe(200)
    stop.abort()
    const streamed = await until(() => sdk.spans().find((s) => attr(s, 'url.path') === `/__tasks/runs/${id}/stream`))
    expect(attr(streamed, 'url.query')).toBe('token=REDACTED&x=1')
    const sent = sdk.spans().flatMap(recorded)
    expect(sent.filter((text) => text.includes(token))).toEqual([])
  })

  it('traces nothing with telemetry: false, or SVC_TELEMETRY=off, and the runs are the same', async () => {
    for (const options of [{ telemetry: false as const }, { env: { SVC_TASK_SECRET: SECRET, SVC_TELEMETRY: 'off' } }]) {
      const before = sdk.spans().length
      const server = await serve(options)
      const res = await fetch(`${server.url}/__tasks/jobs.child`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"n":2}',
      })
      const run = await finishedRun(server, ((await res.json()) as { id: string }).id)
      expect(run.result).toBe(4)
      expect(run.trace).toBeUndefined()
      expect(sdk.spans().length).toBe(before)
    }
  })
})

describe('one trace per run across a restart of its SQLite store', () => {
  const files = sqliteFiles('svc-otel-')
  const open: TaskRuntime[] = []
  afterEach(async () => {
    for (const rt of open.splice(0)) await rt.close()
  })

  it('the execution after the restart continues the trace the run kept', async () => {
    const path = files.dbFile()
    const sleeper = [
      task('jobs.sleeper', async (ctx) => {
        await ctx.step.run('before', () => 1)
        await ctx.step.sleep('nap', 0.3)
        return ctx.step.run('after', () => 2)
      }),
    ]
    const first = createTaskRuntime({
      routes: sleeper,
      store: files.store(path),
      env: {},
      logger: recordingLogger(),
      telemetry: otelTelemetry(api),
    })
    const run = await first.trigger('jobs.sleeper')
    await until(async () => (await first.getRun(run.id))?.status === 'suspended')
    await first.close()

    const second = createTaskRuntime({
      routes: sleeper,
      store: files.store(path),
      env: {},
      logger: recordingLogger(),
      telemetry: otelTelemetry(api),
    })
    open.push(second)
    await second.recover()
    const done = await until(async () => {
      const latest = await second.getRun(run.id)
      return latest?.status === 'completed' ? latest : undefined
    })
    expect(done.result).toBe(2)
    const spans = sdk.spans().filter((s) => attr(s, 'svc.run.id') === run.id)
    const created = spans.find((s) => s.kind === SpanKind.PRODUCER)!
    const executions = spans.filter((s) => s.kind === SpanKind.CONSUMER)
    expect(executions.map((s) => attr(s, 'svc.execution.outcome'))).toEqual(['suspended', 'completed'])
    for (const execution of executions) {
      expect(execution.spanContext().traceId).toBe(created.spanContext().traceId)
      expect(parentOf(execution)).toBe(created.spanContext().spanId)
    }
  })
})
