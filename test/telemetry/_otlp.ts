/**
 * An OTLP/HTTP receiver and server processes that export to it, set up as
 * docs/observability.md shows: its `instrumentation.mjs`, taken from the
 * page, is what each server is started with (`node --import`).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterEach, expect } from 'vitest'
import { codeBlocks, readDoc, ROOT } from '../docs/_markdown.ts'
import { until } from '../_helpers.ts'

export interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[]
  /** The path prefix of the receiver's URL the span was posted to: which server sent it. */
  from: string
}

const children: ChildProcess[] = []
const servers: Server[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
  for (const server of servers.splice(0)) server.close()
})

/** A receiver of OTLP/HTTP JSON traces; a server given `endpoint(name)` posts under `/<name>`. */
export async function otlpReceiver(): Promise<{ spans: OtlpSpan[]; endpoint(name: string): string }> {
  const spans: OtlpSpan[] = []
  const receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const match = /^\/(\w+)\/v1\/traces$/.exec(req.url ?? '')
      if (match) {
        const sent = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: Omit<OtlpSpan, 'from'>[] }[] }[] }
        for (const resource of sent.resourceSpans) {
          for (const scope of resource.scopeSpans) for (const span of scope.spans) spans.push({ ...span, from: match[1] })
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  servers.push(receiver)
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  return { spans, endpoint: (name) => `${base}/${name}` }
}

/** The docs' instrumentation.mjs, written where packages resolve from the repository; its path. */
export function docsInstrumentation(): string {
  const sample = codeBlocks(readDoc('docs/observability.md')).find((block) => block.info === 'js')
  expect(sample?.code).toContain('OTLPTraceExporter')
  const dir = join(ROOT, '.tmp', 'otel-example')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'instrumentation.mjs')
  writeFileSync(file, sample!.code)
  return file
}

export interface TracedServer {
  url: string
  child: ChildProcess
}

/** Starts test/fixtures/otel-app/server.ts with the docs' instrumentation, exporting to `endpoint`. */
export async function tracedServer(endpoint: string, env: Record<string, string> = {}): Promise<TracedServer> {
  const child = spawn(process.execPath, ['--import', docsInstrumentation(), join(ROOT, 'test/fixtures/otel-app/server.ts')], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', SVC_TASK_SECRET: 's', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  const { url } = await until(() => (out.includes('\n') ? (JSON.parse(out.split('\n')[0]) as { url: string }) : undefined), 15_000)
  return { url, child }
}

/** The value of attribute `key` of `span`, as a string. */
export function attribute(span: OtlpSpan, key: string): string | undefined {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : String(value.stringValue ?? value.intValue)
}
