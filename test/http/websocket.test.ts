import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import type { HotPeer, RuntimeApiRoute, SvcRequest } from '../../src/index.ts'
import { recordingLogger, refusal, serve, sleep, until } from './_helpers.ts'

type Frame = { data: string | Buffer; isBinary: boolean }
const inboxes = new WeakMap<WebSocket, { frames: Frame[]; waiters: ((f: Frame) => void)[] }>()

/** Opens a client whose frames are queued from the first byte, so none is missed before a listener is attached. */
function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers })
    const inbox = { frames: [] as Frame[], waiters: [] as ((f: Frame) => void)[] }
    inboxes.set(ws, inbox)
    ws.on('message', (data, isBinary) => {
      const frame = { data: data as Buffer, isBinary }
      const waiter = inbox.waiters.shift()
      if (waiter) waiter(frame)
      else inbox.frames.push(frame)
    })
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  })
}


function nextMessage(ws: WebSocket): Promise<Frame> {
  const inbox = inboxes.get(ws)!
  const queued = inbox.frames.shift()
  if (queued) return Promise.resolve(queued)
  return new Promise((resolve) => inbox.waiters.push(resolve))
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
}

// Module state: lives as long as the process, across connections.
let connections = 0
const closes: { code: number; reason: string }[] = []

const chat: RuntimeApiRoute = {
  path: '/api/rooms/:room',
  module: {
    websocket(peer: HotPeer, req: SvcRequest) {
      connections++
      const room = req.param('room')
      peer.send(`joined ${room} as #${connections} (${req.query('name') ?? 'anon'})`)
      peer.on('message', (data) => {
        if (typeof data === 'string') peer.send(`${room}: ${data}`)
        else peer.send(new Uint8Array([...data].reverse()))
      })
      peer.on('close', (code, reason) => closes.push({ code, reason }))
    },
    GET: (req: SvcRequest) => ({ room: req.param('room'), connections }),
  },
}

const echo = (origins?: string[]): RuntimeApiRoute => ({
  path: '/api/echo',
  module: {
    ...(origins !== undefined ? { route: { kind: 'hot' as const, origins } } : {}),
    websocket: (peer: HotPeer) => void peer.on('message', (d) => peer.send(d)),
  },
})

describe('hot routes', () => {
  it('calls websocket(peer, req) once per connection with route params and the query', async () => {
    const server = await serve({ apiRoutes: [chat] })
    const base = server.url.replace('http', 'ws')
    const a = await open(`${base}/api/rooms/lobby?name=ada`)
    const first = await nextMessage(a)
    expect(first.data.toString()).toMatch(/^joined lobby as #\d+ \(ada\)$/)
    a.send('hello')
    expect((await nextMessage(a)).data.toString()).toBe('lobby: hello')
    a.close()
  })

  it('delivers text frames as strings and binary frames as bytes', async () => {
    const server = await serve({ apiRoutes: [chat] })
    const ws = await open(`${server.url.replace('http', 'ws')}/api/rooms/bin`)
    await nextMessage(ws)
    ws.send(Buffer.from([1, 2, 3]))
    const reply = await nextMessage(ws)
    expect(reply.isBinary).toBe(true)
    expect([...(reply.data as Buffer)]).toEqual([3, 2, 1])
    ws.send('text')
    const text = await nextMessage(ws)
    expect(text.isBinary).toBe(false)
    ws.close()
  })

  it('keeps module state across connections and fires close with the code and reason', async () => {
    const server = await serve({ apiRoutes: [chat] })
    const base = server.url.replace('http', 'ws')
    const before = connections
    const a = await open(`${base}/api/rooms/one`)
    await nextMessage(a)
    const b = await open(`${base}/api/rooms/two`)
    expect((await nextMessage(b)).data.toString()).toContain(`#${before + 2}`)
    a.close(4001, 'bye')
    await until(() => closes.some((c) => c.code === 4001 && c.reason === 'bye'))
    b.close()
  })

  it('serves plain HTTP methods of the same file', async () => {
    const server = await serve({ apiRoutes: [chat] })
    const res = await fetch(`${server.url}/api/rooms/lobby`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ room: 'lobby' })
  })

  it('answers an upgrade to an unknown path with 404 and to a non-hot route with 405', async () => {
    const server = await serve({ apiRoutes: [chat, { path: '/api/plain', module: { POST: () => 1 } }] })
    const base = server.url.replace('http', 'ws')
    expect((await refusal(`${base}/api/nowhere`)).status).toBe(404)
    expect((await refusal(`${base}/api/plain`)).status).toBe(405)
  })

  it('runs onRequest hooks on the handshake, so a session check can refuse it', async () => {
    const server = await serve({
      apiRoutes: [echo()],
      globalHooks: { onRequest: [(req) => (req.headers.get('cookie') === 'sid=1' ? undefined : new Response('no session', { status: 401 }))] },
    })
    const base = server.url.replace('http', 'ws')
    const refused = await refusal(`${base}/api/echo`)
    expect(refused).toEqual({ status: 401, body: 'no session' })
    const ws = await open(`${base}/api/echo`, { cookie: 'sid=1' })
    ws.close()
  })

  it('buffers frames that arrive before an async websocket() has registered its listener', async () => {
    const server = await serve({
      apiRoutes: [
        {
          path: '/api/slow',
          module: {
            async websocket(peer: HotPeer) {
              await sleep(100)
              peer.on('message', (d) => peer.send(`late ${d}`))
            },
          },
        },
      ],
    })
    const ws = await open(`${server.url.replace('http', 'ws')}/api/slow`)
    ws.send('early')
    expect((await nextMessage(ws)).data.toString()).toBe('late early')
    ws.close()
  })

  it('closes the connection with 1011 when websocket() throws, and logs it', async () => {
    const logger = recordingLogger()
    const server = await serve({
      logger,
      apiRoutes: [{ path: '/api/broken', module: { websocket: () => { throw new Error('no db') } } }],
    })
    const ws = await open(`${server.url.replace('http', 'ws')}/api/broken`)
    expect((await closed(ws)).code).toBe(1011)
    expect(logger.text()).toContain('hot route /api/broken: websocket() failed')
  })
})

describe('the origin allowlist of the handshake', () => {
  const cases: { name: string; origins: string[] | undefined; origin: string | undefined; allowed: boolean }[] = [
    { name: 'unset list, any origin', origins: undefined, origin: 'https://evil.example', allowed: true },
    { name: 'listed origin', origins: ['https://app.example'], origin: 'https://app.example', allowed: true },
    { name: 'origin not on the list', origins: ['https://app.example'], origin: 'https://evil.example', allowed: false },
    { name: 'no Origin header', origins: ['https://app.example'], origin: undefined, allowed: true },
    { name: 'empty list denies every browser origin', origins: [], origin: 'https://app.example', allowed: false },
    { name: 'empty list still lets non-browser clients in', origins: [], origin: undefined, allowed: true },
    { name: 'the opaque "null" origin', origins: ['https://app.example'], origin: 'null', allowed: false },
    { name: 'case-insensitive', origins: ['https://App.Example'], origin: 'HTTPS://APP.EXAMPLE', allowed: true },
    { name: 'trailing slash and path normalized away', origins: ['https://app.example/chat/'], origin: 'https://app.example', allowed: true },
    { name: 'default port normalized away', origins: ['https://app.example:443'], origin: 'https://app.example', allowed: true },
    { name: 'another port is another origin', origins: ['https://app.example'], origin: 'https://app.example:8443', allowed: false },
    { name: 'another scheme is another origin', origins: ['https://app.example'], origin: 'http://app.example', allowed: false },
  ]

  for (const c of cases) {
    it(`${c.allowed ? 'accepts' : 'refuses with 403 before the handshake'}: ${c.name}`, async () => {
      const server = await serve({ apiRoutes: [echo(c.origins)] })
      const url = `${server.url.replace('http', 'ws')}/api/echo`
      // `ws` sends Origin only when asked to.
      const headers: Record<string, string> = c.origin === undefined ? {} : { origin: c.origin }
      if (c.allowed) {
        const ws = await open(url, headers)
        ws.send('ping')
        expect((await nextMessage(ws)).data.toString()).toBe('ping')
        ws.close()
      } else {
        const refused = await refusal(url, headers)
        expect(refused.status).toBe(403)
        expect(JSON.parse(refused.body).code).toBe('ORIGIN_NOT_ALLOWED')
      }
    })
  }

  it('reads origins from the manifest entry when the scanner normalized them', async () => {
    const route: RuntimeApiRoute = { path: '/api/echo', kind: 'hot', origins: ['https://app.example'], module: echo().module }
    const server = await serve({ apiRoutes: [route] })
    const url = `${server.url.replace('http', 'ws')}/api/echo`
    expect((await refusal(url, { origin: 'https://other.example' })).status).toBe(403)
  })
})

describe('closeWebSockets', () => {
  it('closes every open socket with 1001 by default and keeps the server running', async () => {
    const server = await serve({ apiRoutes: [echo()] })
    const url = `${server.url.replace('http', 'ws')}/api/echo`
    const a = await open(url)
    const b = await open(url)
    const closing = [closed(a), closed(b)]
    server.closeWebSockets()
    expect((await Promise.all(closing)).map((c) => c.code)).toEqual([1001, 1001])
    const again = await open(url)
    again.send('still here')
    expect((await nextMessage(again)).data.toString()).toBe('still here')
    again.close()
  })

  it('sends the code and reason it is given, and refuses codes a server may not send', async () => {
    const server = await serve({ apiRoutes: [echo()] })
    const ws = await open(`${server.url.replace('http', 'ws')}/api/echo`)
    const done = closed(ws)
    expect(() => server.closeWebSockets(1005)).toThrow(RangeError)
    expect(() => server.closeWebSockets(1000, 'x'.repeat(200))).toThrow(/at most 123 bytes/)
    server.closeWebSockets(4000, 'maintenance')
    expect(await done).toEqual({ code: 4000, reason: 'maintenance' })
  })
})
