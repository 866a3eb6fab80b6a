// A page in Chromium on one origin follows a run whose task server is on
// another, with `svcjs/client` as the page loads it: the preflight, the
// stream through a connection the relay drops once, the run's end, the
// data chunks it shows as they come, and a refusal the page can read; and
// sends the run a signal with `sendRunSignal`, which the run takes.
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'
import { createRunToken, type RunProgress, tokenIdFor } from '../../src/index.ts'
import { launchChromium } from '../dashboard/_browser.ts'
import { serve, until } from '../http/_helpers.ts'
import { type Relay, relay, reportApp, SECRET } from './_runs.ts'

const ADMIN = { authorization: `Bearer ${SECRET}` }

/** The page: it follows the run its query names, and keeps what it is told where the test can read it. */
const PAGE = `<!doctype html><title>run</title><p id="text"></p><script type="module">
import { subscribeRun } from '/svc-client.mjs'
const params = new URLSearchParams(location.search)
window.updates = []
window.chunks = []
window.errors = []
window.ended = undefined
subscribeRun(params.get('stream'), {
  token: params.get('token'),
  retryDelayMs: 100,
  onUpdate: (run) => window.updates.push(run),
  onChunk: (chunk) => {
    window.chunks.push(chunk.seq)
    document.getElementById('text').textContent += chunk.data
  },
  onError: (error) => window.errors.push({ name: error.name, status: error.status, code: error.code, message: error.message }),
}).closed.then((last) => (window.ended = last ?? null))
</script>`

/** The page that sends the run its query names a `message` signal, and keeps the answer where the test can read it. */
const SEND_PAGE = `<!doctype html><title>send</title><script type="module">
import { sendRunSignal } from '/svc-client.mjs'
const params = new URLSearchParams(location.search)
window.sent = undefined
sendRunSignal(params.get('server'), params.get('run'), 'message', { text: 'hello from the page' }, { token: params.get('token') }).then(
  (sent) => (window.sent = sent),
  (error) => (window.sent = { name: error.name, status: error.status, code: error.code, message: error.message }),
)
</script>`

let browser: Browser
let pages: HttpServer
let pageOrigin: string
const relays: Relay[] = []
const open: Page[] = []

beforeAll(async () => {
  // svcjs/client as a page gets it: one ES module, bundled for browsers, with no Node builtin.
  const client = await bundle({ input: fileURLToPath(new URL('../../src/client.ts', import.meta.url)), platform: 'worker', minify: false })
  expect(client.nodeImports).toEqual([])
  pages = createServer((req, res) => {
    if (req.url === '/svc-client.mjs') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(client.code)
    if (req.url?.startsWith('/?')) return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
    if (req.url?.startsWith('/send?')) return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(SEND_PAGE)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve))
  pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`
  browser = await launchChromium()
}, 60_000)

afterEach(async () => {
  await Promise.all(open.splice(0).map((page) => page.close()))
  await Promise.all(relays.splice(0).map((r) => r.close()))
})

afterAll(async () => {
  await Promise.all([browser?.close(), new Promise((resolve) => pages?.close(resolve))])
})

/** The task server, with the page's origin listed or not, behind a relay on a third origin. */
async function start(origins: string) {
  const app = reportApp()
  const server = await serve({
    apiRoutes: app.routes,
    env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET, SVC_REALTIME_ORIGINS: origins },
  })
  const front = await relay(server.url)
  relays.push(front)
  const trigger = async (task: string) =>
    ((await (await fetch(`${server.url}/__tasks/${task}`, { method: 'POST', headers: ADMIN })).json()) as { id: string }).id
  const status = async (id: string) =>
    ((await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as RunProgress).status
  return { server, front, gates: app.gates, trigger, status }
}

/** Opens the page that follows run `id` through `front`. */
async function follow(front: Relay, id: string, token: string): Promise<Page> {
  const page = await browser.newPage()
  open.push(page)
  const query = new URLSearchParams({ stream: `${front.url}/__tasks/runs/${id}/stream`, token })
  await page.goto(`${pageOrigin}/?${query}`)
  return page
}

const updates = (page: Page) => page.evaluate(() => (window as unknown as { updates: RunProgress[] }).updates)
const errors = (page: Page) => page.evaluate(() => (window as unknown as { errors: unknown[] }).errors)
const ended = (page: Page) => page.evaluate(() => (window as unknown as { ended: RunProgress | null | undefined }).ended)

describe('svcjs/client in Chromium, on another origin than the task server', () => {
  it('follows a run to its end, through one dropped connection', async () => {
    const { server, front, gates, trigger, status } = await start(pageOrigin)
    const id = await trigger('jobs.report')
    await until(async () => (await status(id)) === 'suspended')
    front.dropNext()
    const page = await follow(front, id, await createRunToken(id, { secret: SECRET }))

    // The relay cut the first stream after its first event; the page connected again.
    await expect.poll(async () => (await updates(page)).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2)
    expect(front.streams).toBe(2)
    // The token travels in Authorization, which the browser asks leave for first.
    expect(front.requests).toContain(`OPTIONS /__tasks/runs/${id}/stream`)
    expect((await updates(page)).slice(0, 2).map((run) => run.status)).toEqual(['suspended', 'suspended'])

    const approved = await fetch(`${server.url}/__tasks/tokens/${encodeURIComponent(tokenIdFor(id, 'approve'))}`, {
      method: 'POST',
      headers: ADMIN,
    })
    expect(approved.status).toBe(200)
    await expect.poll(async () => (await updates(page)).some((run) => run.status === 'running' && 'approve' in run.steps)).toBe(true)
    gates.render.resolve()

    await expect.poll(() => ended(page), { timeout: 10_000 }).toMatchObject({ status: 'completed', result: { pages: 3 } })
    const last = (await updates(page)).at(-1)!
    expect(Object.keys(last.steps)).toEqual(['fetch', 'approve', 'render'])
    expect(await errors(page)).toEqual([])
    expect(front.streams).toBe(2)
  })

  it('shows the chunks of a run as they come, none twice through a dropped connection', async () => {
    const { server, front, gates, trigger } = await start(pageOrigin)
    const id = await trigger('jobs.write')
    await until(async () => {
      const run = (await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { chunks?: { kept: unknown[] } }
      return run.chunks?.kept.length === 2
    })
    const page = await follow(front, id, await createRunToken(id, { secret: SECRET }))
    const text = () => page.textContent('#text')

    await expect.poll(text, { timeout: 10_000 }).toBe('Hello, ')
    // Cut once the page has shown both chunks, so that it says so when it connects again.
    front.dropOpen()
    await expect.poll(() => front.streams, { timeout: 10_000 }).toBe(2)
    gates.world.resolve()
    await expect.poll(text).toBe('Hello, world')
    gates.finish.resolve()
    await expect.poll(() => ended(page), { timeout: 10_000 }).toMatchObject({ status: 'completed', result: 'written' })
    expect(await page.evaluate(() => (window as unknown as { chunks: number[] }).chunks)).toEqual([1, 2, 3])
    expect(await text()).toBe('Hello, world')
    expect(front.lastEventIds).toEqual([null, '2'])
    expect(await errors(page)).toEqual([])
  })

  it('reads the refusal of a token signed with another secret, and stops', async () => {
    const { front, trigger } = await start(pageOrigin)
    const id = await trigger('jobs.report')
    const page = await follow(front, id, await createRunToken(id, { secret: 'not-the-server-secret' }))
    await expect
      .poll(() => errors(page))
      .toEqual([
        {
          name: 'RunStreamError',
          status: 401,
          code: 'RUN_TOKEN_INVALID',
          message: expect.stringMatching(/not signed with the task secret/),
        },
      ])
    expect(await ended(page)).toBeNull()
    expect(front.streams).toBe(1)
  })

  it('gets nothing from a task server that does not list its origin: the browser stops at the preflight', async () => {
    const { front, trigger } = await start('https://app.example.com')
    const id = await trigger('jobs.report')
    const page = await follow(front, id, await createRunToken(id, { secret: SECRET }))
    await until(() => front.requests.includes(`OPTIONS /__tasks/runs/${id}/stream`))
    await page.waitForTimeout(300)
    expect(front.streams).toBe(0)
    expect(await updates(page)).toEqual([])
  })

  it('sends the run a signal with a token that allows it, through the preflight, and the run takes it', async () => {
    const { server, front, trigger, status } = await start(pageOrigin)
    const id = await trigger('jobs.chat')
    await until(async () => (await status(id)) === 'suspended')
    const page = await send(front, id, await createRunToken(id, { secret: SECRET, signals: ['message'] }))
    await expect
      .poll(() => sent(page), { timeout: 10_000 })
      .toEqual({ id: expect.any(String), runId: id, name: 'message', duplicate: false })
    // The token and the JSON body travel only once the browser has leave.
    expect(front.requests).toEqual(
      expect.arrayContaining([`OPTIONS /__tasks/runs/${id}/signals/message`, `POST /__tasks/runs/${id}/signals/message`]),
    )
    await until(async () => (await status(id)) === 'completed')
    const run = (await (await fetch(`${server.url}/__tasks/${id}`, { headers: ADMIN })).json()) as { result: unknown }
    expect(run.result).toEqual({ text: 'hello from the page' })
  })

  it('reads the refusal of a token that only reads the run', async () => {
    const { front, trigger, status } = await start(pageOrigin)
    const id = await trigger('jobs.chat')
    await until(async () => (await status(id)) === 'suspended')
    const page = await send(front, id, await createRunToken(id, { secret: SECRET }))
    await expect
      .poll(() => sent(page), { timeout: 10_000 })
      .toEqual({
        name: 'RunSignalError',
        status: 403,
        code: 'RUN_TOKEN_NOT_ALLOWED',
        message: expect.stringMatching(/createRunToken\(runId, \{ signals: \['message'\] \}\)/),
      })
    expect(await status(id)).toBe('suspended')
  })

  it('sends nothing to a task server that does not list its origin: the browser stops at the preflight', async () => {
    const { front, trigger, status } = await start('https://app.example.com')
    const id = await trigger('jobs.chat')
    await until(async () => (await status(id)) === 'suspended')
    const page = await send(front, id, await createRunToken(id, { secret: SECRET, signals: true }))
    await expect.poll(() => sent(page), { timeout: 10_000 }).toMatchObject({ name: 'RunSignalError', status: 0, code: 'NETWORK_ERROR' })
    expect(front.requests).toContain(`OPTIONS /__tasks/runs/${id}/signals/message`)
    expect(front.requests).not.toContain(`POST /__tasks/runs/${id}/signals/message`)
    expect(await status(id)).toBe('suspended')
  })
})

/** Opens the page that sends run `id` a signal through `front`. */
async function send(front: Relay, id: string, token: string): Promise<Page> {
  const page = await browser.newPage()
  open.push(page)
  await page.goto(`${pageOrigin}/send?${new URLSearchParams({ server: front.url, run: id, token })}`)
  return page
}

const sent = (page: Page) => page.evaluate(() => (window as unknown as { sent: unknown }).sent)
