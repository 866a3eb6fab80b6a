import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scanApp } from '../src/manifest.ts'
import type { Browser } from 'playwright-core'
import { loadApiRoutes, loadEvents, loadPages, SqliteRunStore, startSvcServer, type SvcServer } from '../src/node.ts'
import { launchChromium } from './dashboard/_browser.ts'

const root = fileURLToPath(new URL('../playground', import.meta.url))

describe('the playground app', () => {
  let server: SvcServer
  const dir = mkdtempSync(join(tmpdir(), 'svc-playground-'))
  let base: string

  beforeAll(async () => {
    server = await startSvcServer({
      apiRoutes: await loadApiRoutes({ root }),
      pages: await loadPages({ root }),
      events: await loadEvents({ root }),
      // Runs in a SQLite file, as `svc dev` keeps them: the order's transactional step writes there.
      store: new SqliteRunStore({ path: join(dir, 'runs.db') }),
      port: 0,
      host: '127.0.0.1',
      staticDirs: [`${root}/public`],
      logger: { info() {}, warn() {}, error: console.error },
    })
    base = `http://127.0.0.1:${server.port}`
  })
  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('scans clean and uses every kind', async () => {
    const scan = await scanApp({ root })
    expect(scan.errors).toEqual([])
    expect(new Set(scan.routes.map((route) => route.kind))).toEqual(new Set(['serverless', 'hot', 'task']))
    expect(scan.routes.some((route) => route.schedule)).toBe(true)
    expect(scan.pages.map((page) => page.mode)).toContain('hybrid')
  })

  it('validates the greet query', async () => {
    expect(await (await fetch(`${base}/api/greet?name=Ada&excited=yes`)).json()).toEqual({ message: 'Hello, Ada!' })
    const bad = await fetch(`${base}/api/greet`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'VALIDATION_FAILED' })
  })

  it('runs the chat room for allowed origins and refuses others', async () => {
    const url = `${base.replace('http', 'ws')}/api/chat?name=ada`
    const ws = new WebSocket(url, { origin: `http://localhost:3000` })
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
    const line = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))))
    ws.send('hi')
    expect(await line).toBe('ada: hi')
    ws.close()
    const refused = new WebSocket(url, { origin: 'https://evil.example' })
    const status = await new Promise<number>((resolve) => refused.once('unexpected-response', (_req, res) => resolve(res.statusCode!)))
    expect(status).toBe(403)
  })

  it('runs the onboarding task through its steps and child task', async () => {
    const res = await fetch(`${base}/__tasks/jobs.onboard`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ada@example.com' }),
    })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    const run = await server.runtime.waitForRun(id)
    expect(run).toMatchObject({ status: 'completed', result: { emailed: true, account: { email: 'ada@example.com' } } })
    expect(Object.keys(run.steps)).toEqual(['create-account', 'settle', 'welcome-email'])
  })

  it('places an order that waits for its payment event, which a webhook sends once however often it is delivered', async () => {
    const order = (await (await fetch(`${base}/api/orders`, { method: 'POST' })).json()) as { orderId: string; runId: string }
    await expect.poll(async () => (await server.runtime.getRun(order.runId))?.status).toBe('suspended')
    expect((await server.runtime.getRun(order.runId))?.suspended?.waitpoint).toMatchObject({ type: 'event', name: 'order.paid' })
    const pay = (body: unknown) =>
      fetch(`${base}/api/webhooks/payment`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': `pay-${order.orderId}` },
        body: JSON.stringify(body),
      })
    // The event's schema (src/events.ts) refuses a payment without an amount.
    expect((await pay({ orderId: order.orderId })).status).toBe(400)
    expect(await (await pay({ orderId: order.orderId, amount: 42 })).json()).toEqual({ event: `pay-${order.orderId}`, resumed: 1 })
    // The provider delivers it again: the same event, which resumes nothing more.
    expect(await (await pay({ orderId: order.orderId, amount: 42 })).json()).toEqual({ event: `pay-${order.orderId}`, resumed: 0 })
    const run = await server.runtime.waitForRun(order.runId)
    expect(run).toMatchObject({ status: 'completed', result: { orderId: order.orderId, status: 'shipped', amount: 42, booked: 42 } })
    expect(run.steps.book).toMatchObject({ kind: 'transaction', output: 42 })
    // Each progress chunk once, though the handler ran again from the top after the wait.
    expect(run.chunks?.kept.map((chunk) => chunk.data)).toEqual([
      { stage: 'awaiting payment', percent: 25 },
      { stage: 'packed', percent: 50 },
      { stage: 'labelled', percent: 75 },
      { stage: 'shipped', percent: 100 },
    ])
  })

  it('runs an approval that the first visit to its link approves, with no secret', async () => {
    const res = await fetch(`${base}/__tasks/approvals.request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ what: 'deploy' }),
    })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as { id: string }
    await expect.poll(async () => (await server.runtime.getRun(id))?.status).toBe('suspended')
    const approveUrl = (await server.runtime.getRun(id))?.metadata?.approveUrl as string
    // Made under the development default (http://localhost:<PORT or 3000>): sent to this server instead.
    const link = new URL(approveUrl)
    expect(link.pathname).toMatch(/^\/__tasks\/callbacks\//)
    const visit = () => fetch(`${base}${link.pathname}?by=ada`)
    expect((await visit()).status).toBe(202)
    expect(await server.runtime.waitForRun(id)).toMatchObject({ status: 'completed', result: { approved: true, by: 'ada' } })
    const again = await visit()
    expect(again.status).toBe(409)
    expect(await again.json()).toMatchObject({ code: 'CALLBACK_USED' })
  })

  it('books a trip, and undoes the flight and the hotel, last first, when no car is left', async () => {
    const book = async (body: unknown) => {
      const res = await fetch(`${base}/__tasks/trips.book`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(202)
      return server.runtime.waitForRun(((await res.json()) as { id: string }).id)
    }
    expect(await book({ trip: 'porto' })).toMatchObject({ status: 'completed', result: { car: expect.stringMatching(/^car-porto-/) } })
    const failed = await book({ trip: 'lisbon', car: false })
    expect(failed).toMatchObject({
      status: 'failed',
      compensation: { status: 'completed', error: 'No car is left for lisbon' },
      steps: { 'compensate:hotel': { kind: 'compensation' }, 'compensate:flight': { kind: 'compensation' } },
    })
    const undone = failed.logs?.kept.map((entry) => entry.message).filter((message) => message.startsWith('Cancelled'))
    expect(undone).toEqual([
      `Cancelled hotel ${(failed.steps.hotel.output as { ref: string }).ref}`,
      `Cancelled flight ${(failed.steps.flight.output as { ref: string }).ref}`,
    ])
  })

  it('fills a cart with updates, each answered with the cart so far, until its checkout signal', async () => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}/__tasks/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    const { id } = (await (await post('carts.open', {})).json()) as { id: string }
    const add = async (item: unknown, key?: string) => {
      const res = await post(`runs/${id}/updates/add-item`, item, key === undefined ? {} : { 'idempotency-key': key })
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    expect(await add({ sku: 'tea', quantity: 2 }, 'add-1')).toMatchObject({
      status: 200,
      body: { status: 'completed', result: { tea: 2 } },
    })
    expect((await add({ sku: 'scone' })).body.result).toEqual({ tea: 2, scone: 1 })
    // The same id is the same update: answered again, not added twice.
    expect((await add({ sku: 'tea', quantity: 2 }, 'add-1')).body.result).toEqual({ tea: 2 })
    expect(await add({ sku: 'tea', quantity: 0 })).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } })
    expect((await add({ sku: 'tea' })).body.result).toEqual({ tea: 3, scone: 1 })
    expect((await post(`runs/${id}/signals/checkout`, { card: 'visa' })).status).toBe(202)
    expect(await server.runtime.waitForRun(id)).toMatchObject({
      status: 'completed',
      result: { status: 'checked out', items: { tea: 3, scone: 1 }, card: 'visa' },
    })
    expect(await add({ sku: 'jam' })).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })
  })

  it('shows the order page in Chromium: its progress streams live and ends once the payment is sent', async () => {
    let browser: Browser | undefined
    try {
      browser = await launchChromium()
      const page = await browser.newPage()
      await page.goto(`${base}/order.html`)
      await page.click('#place')
      await page.waitForFunction(() => document.getElementById('stage')?.textContent === 'awaiting payment')
      expect(await page.locator('#bar').evaluate((bar) => (bar as HTMLProgressElement).value)).toBe(25)
      await page.click('#pay-now')
      await page.waitForFunction(() => document.getElementById('result')?.textContent?.startsWith('Done'))
      expect(await page.locator('#stage').textContent()).toBe('shipped')
      expect(await page.locator('#bar').evaluate((bar) => (bar as HTMLProgressElement).value)).toBe(100)
      expect(await page.locator('#status').textContent()).toBe('completed')
    } finally {
      await browser?.close()
    }
  }, 60_000)

  it('caches the hybrid home page', async () => {
    const first = await fetch(`${base}/`)
    const html = await first.text()
    const second = await fetch(`${base}/`)
    expect(second.headers.get('x-svc-cache')).toBe('HIT')
    expect(await second.text()).toBe(html)
  })
})

// The README's "Develop" command, as a contributor runs it on a fresh clone.
describe('npm run playground', () => {
  it('serves the playground under svc dev, its runs in SQLite and the dashboard open', async () => {
    const { spawn } = await import('node:child_process')
    const repo = fileURLToPath(new URL('..', import.meta.url))
    const child = spawn('npm', ['run', 'playground', '--', '--port', '0', '--host', '127.0.0.1'], {
      cwd: repo,
      env: { ...process.env, SVC_TASK_SECRET: '', NODE_ENV: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let out = ''
    child.stdout!.on('data', (chunk) => (out += chunk))
    child.stderr!.on('data', (chunk) => (out += chunk))
    try {
      const started = Date.now()
      while (!out.includes('Dashboard:')) {
        if (child.exitCode !== null || Date.now() - started > 30_000) throw new Error(`npm run playground did not start:\n${out}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(out).toMatch(/Runs: SQLite \S*playground\/\.svc\/runs\.db/)
      const url = /svc dev: (http:\/\/\S+)/.exec(out)![1]
      expect((await fetch(`${url}/__svc/dashboard`)).status).toBe(200)
      expect((await fetch(`${url}/__tasks`)).status).toBe(200)
    } finally {
      process.kill(-child.pid!, 'SIGTERM')
    }
  }, 60_000)
})
