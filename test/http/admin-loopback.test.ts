/**
 * The loopback exemption of the admin surface, over real servers on port 0:
 * without a task secret, in development or test, a loopback peer is served
 * only when the request is the developer's own, made on this machine. A page
 * of another site in their browser (Fetch Metadata, `Origin`, a DNS-rebound
 * `Host`) and a proxy on the same host are refused with 403. Bodies sent to
 * the surface are JSON in every mode, so no HTML form and no request without
 * a CORS preflight reaches it. WebSocket handshakes to it are refused at once.
 */
import { randomBytes } from 'node:crypto'
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createTaskRuntime, type RuntimeApiRoute, type RuntimePage, type TaskRuntime } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/echo', module: { kind: 'task', POST: async (ctx: { input: unknown }) => ctx.input ?? null } },
  { path: '/api/wait', module: { kind: 'task', POST: async (ctx: any) => ctx.step.waitForToken('ok') } },
]
const pages: RuntimePage[] = [{ path: '/cached', mode: 'hybrid', revalidate: 60, module: { default: () => '<p>cached</p>' } }]

type SvcTestServer = Awaited<ReturnType<typeof serve>>

function dev(env: Record<string, string> = { NODE_ENV: 'development' }): Promise<SvcTestServer> {
  return serve({ apiRoutes: routes, pages, env })
}

interface Answer {
  status: number
  headers: IncomingMessage['headers']
  body: string
}

/** One request with exactly these headers (node:http, so `Host` is ours to set). */
function send(
  server: { port: number },
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: server.port, method, path, headers: { host: `localhost:${server.port}`, ...headers } },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** A task secret of the length a production server requires (32 bytes at least). */
const SECRET = 's3cret-0123456789abcdef0123456789ab'
const JSON_TYPE = { 'content-type': 'application/json' }

async function runCount(server: SvcTestServer): Promise<number> {
  return (await server.runtime.listRuns()).length
}

const servers = new Set<Server>()
afterEach(async () => {
  await Promise.all([...servers].map((s) => new Promise((resolve) => s.close(resolve))))
  servers.clear()
})

describe('without a task secret, in development: the requests of this machine', () => {
  it('still serves a loopback client that sends no browser headers, such as curl', async () => {
    const server = await dev()
    const res = await send(server, 'POST', '/__tasks/echo', JSON_TYPE, '{"hello":"world"}')
    expect(res.status).toBe(202)
    const { id } = JSON.parse(res.body)
    expect((await server.runtime.waitForRun(id)).result).toEqual({ hello: 'world' })
    expect((await send(server, 'GET', `/__tasks/${id}`)).status).toBe(200)
    expect((await send(server, 'GET', '/__tasks/runs')).status).toBe(200)
    expect((await send(server, 'GET', '/__svc/dashboard')).status).toBe(200)
    expect((await send(server, 'GET', '/__svc/dashboard/tasks')).status).toBe(200)
  })

  it('accepts every loopback name in Host, with or without a port', async () => {
    const server = await dev()
    for (const host of ['localhost', 'LOCALHOST:1', 'app.localhost:3000', '127.0.0.1', '127.1.2.3:80', '[::1]', '[::1]:3000']) {
      expect((await send(server, 'GET', '/__tasks', { host })).status, host).toBe(200)
    }
  })

  it('refuses a Host that is not a loopback name with 403 FORBIDDEN, as DNS rebinding would send', async () => {
    const server = await dev()
    const { id } = JSON.parse((await send(server, 'POST', '/__tasks/echo', JSON_TYPE, '{}')).body)
    const rebound = { host: `rebind.attacker.example:${server.port}` }
    for (const path of [`/__tasks/${id}`, '/__tasks/runs', '/__tasks', '/__svc/dashboard', '/__svc/dashboard/tasks']) {
      const res = await send(server, 'GET', path, rebound)
      expect(res.status, path).toBe(403)
      const body = JSON.parse(res.body)
      expect(body.code).toBe('FORBIDDEN')
      expect(body.error).toContain('Host')
      expect(body.error).toContain('rebind.attacker.example')
      expect(body.error).toContain('SVC_TASK_SECRET')
    }
    const before = await runCount(server)
    expect((await send(server, 'POST', '/__tasks/echo', { ...rebound, ...JSON_TYPE }, '{}')).status).toBe(403)
    expect(await runCount(server)).toBe(before)
    for (const host of ['localhost.attacker.example', 'localhostx', '127.0.0.1.nip.io', '10.0.0.1', '0.0.0.0', '[::2]', 'localhost:80x']) {
      expect((await send(server, 'GET', '/__tasks', { host })).status, JSON.stringify(host)).toBe(403)
    }
  })

  it('refuses an Origin of another site with 403 naming it; loopback origins on any port pass', async () => {
    const server = await dev()
    const res = await send(server, 'POST', '/__tasks/echo', { origin: 'http://evil.example', ...JSON_TYPE }, '{}')
    expect(res.status).toBe(403)
    expect(JSON.parse(res.body)).toMatchObject({ code: 'FORBIDDEN', error: expect.stringContaining('http://evil.example') })
    for (const origin of ['null', 'http://localhost.evil.example', 'https://127.0.0.1.evil.example:8443', 'http://evil.example:80']) {
      expect((await send(server, 'GET', '/__tasks', { origin })).status, origin).toBe(403)
    }
    expect(await runCount(server)).toBe(0)
    for (const origin of [`http://localhost:${server.port}`, 'http://127.0.0.1:5173', 'https://app.localhost', 'http://[::1]:8080']) {
      expect((await send(server, 'GET', '/__tasks', { origin })).status, origin).toBe(200)
    }
  })

  it('refuses Sec-Fetch-Site cross-site and same-site (a page of another origin) with 403; same-origin and none pass', async () => {
    const server = await dev()
    for (const site of ['cross-site', 'same-site']) {
      const res = await send(server, 'POST', '/__tasks/echo', { 'sec-fetch-site': site, ...JSON_TYPE }, '{}')
      expect(res.status, site).toBe(403)
      expect(JSON.parse(res.body).error).toMatch(new RegExp(`Sec-Fetch-Site.*${site}`))
      expect((await send(server, 'GET', '/__svc/dashboard', { 'sec-fetch-site': site })).status, site).toBe(403)
    }
    expect(await runCount(server)).toBe(0)
    for (const site of ['same-origin', 'none'])
      expect((await send(server, 'GET', '/__tasks', { 'sec-fetch-site': site })).status, site).toBe(200)
  })

  it('refuses requests that came through a proxy (Forwarded, X-Forwarded-For) with 403 naming the header', async () => {
    const server = await dev()
    for (const [name, value] of [
      ['x-forwarded-for', '127.0.0.1'],
      ['forwarded', 'for=127.0.0.1'],
    ]) {
      const res = await send(server, 'POST', '/__tasks/echo', { [name]: value, ...JSON_TYPE }, '{}')
      expect(res.status, name).toBe(403)
      expect(JSON.parse(res.body).error.toLowerCase()).toContain(name)
      expect((await send(server, 'GET', '/__svc/dashboard', { [name]: value })).status, name).toBe(403)
    }
    expect(await runCount(server)).toBe(0)
  })

  it('applies the same rule to /__svc/revalidate', async () => {
    const server = await dev()
    const body = '{"paths":["/cached"]}'
    expect((await send(server, 'POST', '/__svc/revalidate', JSON_TYPE, body)).status).toBe(200)
    const foreign: Record<string, string>[] = [
      { host: 'rebind.attacker.example' },
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'x-forwarded-for': '1.2.3.4' },
    ]
    for (const headers of foreign) {
      const res = await send(server, 'POST', '/__svc/revalidate', { ...JSON_TYPE, ...headers }, body)
      expect(res.status, JSON.stringify(headers)).toBe(403)
    }
  })

  it('holds in test as in development, and leaves the secret alone: with one, the bearer is what counts', async () => {
    const test = await dev({ NODE_ENV: 'test' })
    expect((await send(test, 'GET', '/__tasks', { host: 'rebind.attacker.example' })).status).toBe(403)
    const withSecret = await dev({ NODE_ENV: 'development', SVC_TASK_SECRET: SECRET })
    const bearer = {
      authorization: `Bearer ${SECRET}`,
      host: 'tasks.example.com',
      origin: 'https://ops.example.com',
      'x-forwarded-for': '203.0.113.9',
    }
    expect((await send(withSecret, 'GET', '/__tasks', bearer)).status).toBe(200)
    expect((await send(withSecret, 'GET', '/__tasks')).status).toBe(401)
  })

  it('refuses a request forwarded by a proxy on the same host, which adds X-Forwarded-For as most proxies do', async () => {
    const server = await dev()
    // A reverse proxy on this machine: its requests reach svc from loopback.
    const proxy = createServer((req, res) => {
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: server.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: `127.0.0.1:${server.port}`, 'x-forwarded-for': req.socket.remoteAddress ?? '' },
        },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers)
          answer.pipe(res)
        },
      )
      req.pipe(upstream)
    })
    servers.add(proxy)
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const through = { port: (proxy.address() as AddressInfo).port }
    const res = await send(through, 'POST', '/__tasks/echo', { ...JSON_TYPE, host: `127.0.0.1:${through.port}` }, '{}')
    expect(res.status).toBe(403)
    expect(JSON.parse(res.body).error).toContain('X-Forwarded-For')
    expect((await send(through, 'GET', '/__tasks/runs')).status).toBe(403)
    expect((await send(through, 'GET', '/__svc/dashboard')).status).toBe(403)
    expect(await runCount(server)).toBe(0)
  })
})

describe('bodies sent to the admin surface are JSON, in every mode', () => {
  it('answers a text/plain POST with 415 UNSUPPORTED_MEDIA_TYPE and starts no run', async () => {
    const server = await dev()
    const res = await send(server, 'POST', '/__tasks/echo', { 'content-type': 'text/plain' }, '{"hello":"world"}')
    expect(res.status).toBe(415)
    const body = JSON.parse(res.body)
    expect(body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
    expect(body.error).toContain('application/json')
    expect(body.error).toContain('text/plain')
    expect(await runCount(server)).toBe(0)
  })

  it('refuses what an HTML form sends, and a body without a type', async () => {
    const server = await dev()
    for (const type of [
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'text/plain;charset=UTF-8',
      'application/jsonx',
      undefined,
    ]) {
      const headers: Record<string, string> = type === undefined ? {} : { 'content-type': type }
      expect((await send(server, 'POST', '/__tasks/echo', headers, '{}')).status, String(type)).toBe(415)
    }
    expect(await runCount(server)).toBe(0)
  })

  it('takes application/json with parameters and the +json types', async () => {
    const server = await dev()
    for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/vnd.api+json']) {
      expect((await send(server, 'POST', '/__tasks/echo', { 'content-type': type }, '{}')).status, type).toBe(202)
    }
  })

  it('takes a POST without a body whatever its type: it carries nothing to read', async () => {
    const server = await dev()
    expect((await send(server, 'POST', '/__tasks/echo')).status).toBe(202)
    // `curl -d ''` sends an empty form body.
    expect(
      (await send(server, 'POST', '/__tasks/echo', { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '0' })).status,
    ).toBe(202)
  })

  it('applies to tokens, cancel and replay, /__svc/revalidate and the dashboard paths too', async () => {
    const server = await dev()
    const { id } = JSON.parse((await send(server, 'POST', '/__tasks/wait', JSON_TYPE, '{}')).body)
    await until(async () => (await server.runtime.getRun(id))?.status === 'suspended')
    const text = { 'content-type': 'text/plain' }
    for (const path of [
      `/__tasks/tokens/${encodeURIComponent(`${id}:ok`)}`,
      `/__tasks/runs/${id}/cancel`,
      `/__tasks/runs/${id}/replay`,
      '/__svc/revalidate',
      '/__svc/dashboard/tasks',
    ]) {
      const res = await send(server, 'POST', path, text, '{"paths":["/cached"]}')
      expect(res.status, path).toBe(415)
    }
    expect((await server.runtime.getRun(id))?.status).toBe('suspended')
    expect(await runCount(server)).toBe(1)
  })

  it('with a secret too: the right bearer and a text/plain body still get 415', async () => {
    const server = await dev({ NODE_ENV: 'production', SVC_TASK_SECRET: SECRET })
    const res = await send(server, 'POST', '/__tasks/echo', { authorization: `Bearer ${SECRET}`, 'content-type': 'text/plain' }, '{}')
    expect(res.status).toBe(415)
    expect(await runCount(server)).toBe(0)
    const ok = await send(server, 'POST', '/__tasks/echo', { authorization: `Bearer ${SECRET}`, ...JSON_TYPE }, '{}')
    expect(ok.status).toBe(202)
  })
})

/** A runtime whose live `onRunChange` subscriptions are counted. */
function countingRuntime(): { runtime: TaskRuntime; live: () => number } {
  const runtime = createTaskRuntime({ routes, env: {} })
  let live = 0
  const listen = runtime.onRunChange!
  runtime.onRunChange = (listener, onEnd) => {
    live++
    let counted = true
    const uncount = () => {
      if (counted) live--
      counted = false
    }
    const stop = listen(listener, () => {
      uncount()
      onEnd?.()
    })
    return () => {
      uncount()
      stop()
    }
  }
  return { runtime, live: () => live }
}

/** Writes a WebSocket handshake (RFC 6455 §4.1) for `path`; resolves to what came back before `waitMs`, and the socket. */
async function upgrade(port: number, path: string, waitMs = 2000): Promise<{ head: string; close: () => void }> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(
    `GET ${path} HTTP/1.1\r\nhost: localhost:${port}\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: ${randomBytes(16).toString('base64')}\r\nsec-websocket-version: 13\r\n\r\n`,
  )
  let received = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => (received += chunk))
  const deadline = Date.now() + waitMs
  while (!received.includes('\r\n\r\n') && Date.now() < deadline && !socket.destroyed) await new Promise((r) => setTimeout(r, 10))
  return { head: received, close: () => socket.destroy() }
}

describe('WebSocket handshakes to the admin surface', () => {
  it('are answered with a 4xx at once, before any handler runs, and leave no run-change subscription behind', async () => {
    const { runtime, live } = countingRuntime()
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'development' }, runtime })
    try {
      const opened = await Promise.all(Array.from({ length: 20 }, () => upgrade(server.port, '/__tasks/events')))
      for (const { head } of opened) expect(head).toMatch(/^HTTP\/1\.1 4\d\d /)
      for (const { close } of opened) close()
      await until(() => live() === 0, 2000)
      expect(live()).toBe(0)
      for (const path of ['/__tasks', '/__tasks/runs', '/__svc/dashboard', '/__svc/dashboard/tasks']) {
        const { head, close } = await upgrade(server.port, path)
        close()
        expect(head, path).toMatch(/^HTTP\/1\.1 4\d\d /)
      }
    } finally {
      await server.close()
      await runtime.close()
    }
  })
})
