// The setup docs/observability.md shows, as a user runs it: its
// instrumentation.mjs, taken from the page, registers the SDK with the
// OTLP/HTTP exporter, and a server started with `node --import` on it sends
// a run's whole trace to an OTLP receiver (this test's HTTP server).
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { codeBlocks, readDoc, ROOT } from '../docs/_markdown.ts'
import { until } from '../_helpers.ts'

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[]
}

const children: ChildProcess[] = []
const servers: Server[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
  for (const server of servers.splice(0)) server.close()
})

it('sends every span of a run to an OTLP/HTTP receiver, set up as the docs show', async () => {
  // The receiver: OTLP/HTTP JSON posts to /v1/traces.
  const spans: OtlpSpan[] = []
  const receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const sent = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }
        for (const resource of sent.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  servers.push(receiver)
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`

  // The page's instrumentation.mjs, where packages resolve from the repository.
  const sample = codeBlocks(readDoc('docs/observability.md')).find((block) => block.info === 'js')
  expect(sample?.code).toContain('OTLPTraceExporter')
  const dir = join(ROOT, '.tmp', 'otel-example')
  mkdirSync(dir, { recursive: true })
  const instrumentation = join(dir, 'instrumentation.mjs')
  writeFileSync(instrumentation, sample!.code)

  const child = spawn(process.execPath, ['--import', instrumentation, join(ROOT, 'test/fixtures/otel-app/server.ts')], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', SVC_TASK_SECRET: 's' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  const { url } = await until(() => (out.includes('\n') ? (JSON.parse(out.split('\n')[0]) as { url: string }) : undefined), 15_000)

  const traceId = 'aaaabbbbccccddddeeeeffff00001111'
  const res = await fetch(`${url}/__tasks/jobs.report`, {
    method: 'POST',
    headers: { authorization: 'Bearer s', 'content-type': 'application/json', traceparent: `00-${traceId}-1111222233334444-01` },
    body: '{}',
  })
  expect(res.status).toBe(202)
  const { id } = (await res.json()) as { id: string }
  const ofRun = () => spans.filter((span) => span.attributes.some((a) => a.key === 'svc.run.id' && a.value.stringValue === id))
  // create, two executions (before and after the sleep), and two steps.
  await until(() => ofRun().length >= 5, 15_000)
  expect(
    ofRun()
      .map((span) => span.name)
      .sort(),
  ).toEqual(['create jobs.report', 'process jobs.report', 'process jobs.report', 'step query', 'step render'])
  expect(ofRun().every((span) => span.traceId === traceId)).toBe(true)
  const request = spans.find((span) => span.name === 'POST' && span.traceId === traceId)
  expect(request?.parentSpanId).toBe('1111222233334444')
})
