import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/build/build.ts'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { createVercelHandler } from '../../targets/vercel/runtime.ts'
import { builtJson, builtOnce, utcOnlyWarning, writeApp, ZONED_TASKS } from './_app.ts'
import { TASK_SECRET, targetContract } from './contract.ts'

const CRON_SECRET = 'cron-secret'

type FunctionHandler = (req: Parameters<RequestListener>[0], res: Parameters<RequestListener>[1]) => Promise<void>

/** The function's (req, res) handler behind a real Node server, as Vercel's Node launcher calls it. */
async function serveFunction(handler: FunctionHandler): Promise<{ base: string; failures: unknown[]; close: () => Promise<void> }> {
  const failures: unknown[] = []
  const server: Server = createServer((req, res) => void handler(req, res).catch((error) => failures.push(error)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failures,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const built = builtOnce('vercel')

/**
 * A fresh instance of the built function, as a new function instance loads
 * it: the query makes a module instance of its own.
 */
async function loadFunction(instance: string): Promise<FunctionHandler> {
  process.env.CRON_SECRET = CRON_SECRET
  process.env.SVC_TASK_SECRET = TASK_SECRET
  const url = pathToFileURL(join((await built()).root, '.vercel/output/functions/__svc.func/index.mjs'))
  url.search = instance
  return ((await import(url.href)) as { default: FunctionHandler }).default
}

afterAll(() => {
  delete process.env.CRON_SECRET
  delete process.env.SVC_TASK_SECRET
})

const cronUrl = (base: string, expression: string) => `${base}/__svc/cron?cron=${encodeURIComponent(expression)}`

targetContract({
  name: 'vercel',
  async start() {
    const fn = await serveFunction(await loadFunction('contract'))
    return {
      async fetch(request) {
        const url = new URL(request.url)
        const body = request.body ? await request.arrayBuffer() : undefined
        return fetch(`${fn.base}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body,
          redirect: 'manual',
        })
      },
      // Vercel calls the cron job's path with the CRON_SECRET bearer and
      // counts the invocation as failed by its status code.
      async cron(expression) {
        const res = await fetch(cronUrl(fn.base, expression), { headers: { authorization: `Bearer ${CRON_SECRET}` } })
        if (res.status === 200) return { ok: true }
        if (res.status !== 500) throw new Error(`the cron request answered ${res.status}: ${await res.text()}`)
        return { ok: false, error: ((await res.json()) as { error: string }).error }
      },
      close: fn.close,
    }
  },
})

describe('svc build --target vercel', () => {
  let fn: Awaited<ReturnType<typeof serveFunction>>
  const out = async () => join((await built()).root, '.vercel/output')
  const auth = { authorization: `Bearer ${TASK_SECRET}` }

  beforeAll(async () => {
    fn = await serveFunction(await loadFunction('particulars'))
  })
  afterAll(() => fn?.close())

  it('follows the Build Output API v3 layout, with one cron job per schedule and the one-minute tick', async () => {
    const config = JSON.parse(await readFile(join(await out(), 'config.json'), 'utf8'))
    expect(config.version).toBe(3)
    expect(config.routes).toEqual([{ handle: 'filesystem' }, { src: '/(.*)', dest: '/__svc' }])
    expect(config.crons.sort((a: { schedule: string }, b: { schedule: string }) => a.schedule.localeCompare(b.schedule))).toEqual([
      { path: '/__svc/cron', schedule: '* * * * *' },
      { path: '/__svc/cron?cron=*%2F10%20*%20*%20*%20*', schedule: '*/10 * * * *' },
      { path: '/__svc/cron?cron=0%203%20*%20*%20*', schedule: '0 3 * * *' },
    ])
    const vc = JSON.parse(await readFile(join(await out(), 'functions/__svc.func/.vc-config.json'), 'utf8'))
    expect(vc).toMatchObject({ handler: 'index.mjs', launcherType: 'Nodejs' })
    expect(vc.runtime).toMatch(/^nodejs\d+\.x$/)
    expect((await stat(join(await out(), 'functions/__svc.func/index.mjs'))).size).toBeGreaterThan(0)
  })

  it('leaves hot routes out with the exact warning', async () => {
    expect((await built()).build.warnings).toEqual([
      '[svc] 1 hot route(s) cannot run on vercel and were not bundled: /api/live — deploy them to a persistent host',
    ])
  })

  // Without the platform's waitUntil the function may be frozen once it has answered,
  // so the answer waits for the run: the record read right after it is final.
  it('answers a task started over HTTP only once the run has ended, without a platform waitUntil', async () => {
    const res = await fetch(`${fn.base}/__tasks/jobs.slow`, { method: 'POST', headers: auth })
    expect(res.status).toBe(202)
    const { id, status } = (await res.json()) as { id: string; status: string }
    expect(status).toBe('running')
    const run = await fetch(`${fn.base}/__tasks/${id}`, { headers: auth })
    expect(await run.json()).toMatchObject({ status: 'completed', result: { slept: 100 } })
  })

  it('refuses a cron request without the CRON_SECRET bearer: 401 with WWW-Authenticate: Bearer', async () => {
    for (const headers of [{}, auth]) {
      const res = await fetch(cronUrl(fn.base, '*/10 * * * *'), { headers })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
      expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' })
    }
  })

  it('adds no tick for an app without tasks', async () => {
    const config = await builtJson({ 'src/api/hello.ts': `export const GET = () => 'hi'\n` }, 'vercel', '.vercel/output/config.json')
    expect(config.crons).toEqual([])
  })

  it('answers the tick (the cron path without ?cron=) behind the CRON_SECRET bearer; on the memory store it has nothing to sweep', async () => {
    expect((await fetch(`${fn.base}/__svc/cron`)).status).toBe(401)
    const res = await fetch(`${fn.base}/__svc/cron`, { headers: { authorization: `Bearer ${CRON_SECRET}` } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, inFlight: 0 })
    const empty = await fetch(`${fn.base}/__svc/cron?cron=`, { headers: { authorization: `Bearer ${CRON_SECRET}` } })
    expect(empty.status).toBe(400)
    expect(await empty.json()).toMatchObject({ code: 'BAD_REQUEST' })
  })

  it('answers a cron request with the summary of the runs it fired', async () => {
    const res = await fetch(cronUrl(fn.base, '*/10 * * * *'), { headers: { authorization: `Bearer ${CRON_SECRET}` } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, runs: [{ id: expect.any(String), taskName: 'jobs.tick', status: 'completed' }] })
  })

  // Vercel records a cron invocation as failed by its status code.
  it('answers a cron request whose task fails with 500 CRON_RUN_FAILED and the summary of every run', async () => {
    const res = await fetch(cronUrl(fn.base, '0 3 * * *'), { headers: { authorization: `Bearer ${CRON_SECRET}` } })
    expect(res.status).toBe(500)
    const body = (await res.json()) as {
      ok: boolean
      code: string
      error: string
      runs: Array<{ id: string; taskName: string; status: string }>
    }
    expect(body).toMatchObject({ ok: false, code: 'CRON_RUN_FAILED' })
    expect(body.runs.map(({ taskName, status }) => ({ taskName, status })).sort((a, b) => a.taskName.localeCompare(b.taskName))).toEqual([
      { taskName: 'jobs.import', status: 'failed' },
      { taskName: 'jobs.report', status: 'completed' },
    ])
    const failed = body.runs.find((run) => run.taskName === 'jobs.import')!
    expect(body.error).toContain(`jobs.import (run ${failed.id}: the nightly import failed)`)
  })

  // Vercel cron jobs fire on UTC only: without a warning, a task meant for
  // 09:00 in Paris would silently run at 09:00 UTC.
  it("warns that a task's time zone is not applied, naming the task", async () => {
    const app = await writeApp(ZONED_TASKS)
    try {
      expect((await buildApp({ root: app.root, target: 'vercel' })).warnings).toEqual([utcOnlyWarning('vercel')])
    } finally {
      await app.cleanup()
    }
  })
})

describe('the Vercel function and streamed response bodies', () => {
  const opened: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const close of opened.splice(0)) await close()
  })
  const serveRoutes = async (routes: RuntimeApiRoute[]) => {
    const fn = await serveFunction(createVercelHandler({ routes, logger: { info() {}, warn() {}, error() {} } }) as FunctionHandler)
    opened.push(fn.close)
    return fn
  }

  it('ends the response when the body stream fails midway, instead of leaving the client waiting', async () => {
    const { base, failures } = await serveRoutes([
      {
        path: '/api/broken',
        module: {
          GET: () =>
            new Response(
              new ReadableStream({
                start(controller) {
                  controller.enqueue(new TextEncoder().encode('partial'))
                  controller.error(new Error('the source failed'))
                },
              }),
              { headers: { 'content-type': 'text/plain' } },
            ),
        },
      },
    ])
    // A generous guard: without the fix the body never ends and only this abort stops the read.
    const guard = AbortSignal.timeout(10_000)
    // Whether the head got out first or not, the client must see a failure, not a complete body.
    await expect(fetch(`${base}/api/broken`, { signal: guard }).then((res) => res.text())).rejects.toThrow()
    expect(guard.aborted).toBe(false)
    // The error still reaches the platform, which logs it.
    expect(failures).toHaveLength(1)
  })

  it('cancels the body stream when the client goes away', async () => {
    let cancelled!: () => void
    const wasCancelled = new Promise<void>((resolve) => (cancelled = resolve))
    let timer: ReturnType<typeof setInterval> | undefined
    const { base } = await serveRoutes([
      {
        path: '/api/events',
        module: {
          // An endless event stream: only a cancel stops it.
          GET: () =>
            new Response(
              new ReadableStream({
                start(controller) {
                  timer = setInterval(() => controller.enqueue(new TextEncoder().encode('data: tick\n\n')), 10)
                },
                cancel() {
                  clearInterval(timer)
                  cancelled()
                },
              }),
              { headers: { 'content-type': 'text/event-stream' } },
            ),
        },
      },
    ])
    const client = new AbortController()
    const res = await fetch(`${base}/api/events`, { signal: client.signal })
    const reader = res.body!.getReader()
    await reader.read()
    client.abort()
    const outcome = await Promise.race([
      wasCancelled.then(() => 'cancelled'),
      new Promise((resolve) => setTimeout(() => resolve('still streaming'), 10_000)),
    ])
    clearInterval(timer)
    expect(outcome).toBe('cancelled')
  })
})
