import { Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { createTaskRuntime, getActiveTaskRuntime, type HotPeer, type RuntimeApiRoute } from '../../src/index.ts'
import { startSvcServer } from '../../src/node.ts'
import { resolveHost } from '../../src/node/host.ts'
import { deferred, RawConnection, recordingLogger, serve, until } from './_helpers.ts'

describe('startSvcServer', () => {
  it('binds an ephemeral port for port 0 and exposes the underlying http.Server', async () => {
    const server = await serve()
    expect(server.server).toBeInstanceOf(Server)
    expect(server.port).toBeGreaterThan(0)
    expect(server.port).toBe((server.server.address() as { port: number }).port)
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    expect(await (await fetch(`${server.url}/__health`)).json()).toEqual({ ok: true, framework: 'svc' })
  })

  it('binds 127.0.0.1 outside production, 0.0.0.0 in production, and HOST or the option when given', async () => {
    const local = await serve({ env: { NODE_ENV: 'development' } })
    expect((local.server.address() as { address: string }).address).toBe('127.0.0.1')
    const prod = await serve({ env: { NODE_ENV: 'production' } })
    expect((prod.server.address() as { address: string }).address).toBe('0.0.0.0')
    const fromEnv = await serve({ env: { NODE_ENV: 'production', HOST: '127.0.0.1' } })
    expect((fromEnv.server.address() as { address: string }).address).toBe('127.0.0.1')
    expect(resolveHost('::1', { HOST: '0.0.0.0' })).toBe('::1')
    expect(resolveHost(undefined, { HOST: '10.1.2.3', NODE_ENV: 'production' })).toBe('10.1.2.3')
    expect(resolveHost(undefined, {})).toBe('127.0.0.1')
  })

  it('rejects bad options with TypeError or RangeError naming the option and the value', async () => {
    const base = { apiRoutes: [], pages: [], installSignalHandlers: false }
    await expect(startSvcServer(undefined as never)).rejects.toThrow(TypeError)
    await expect(startSvcServer({ ...base, apiRoutes: undefined as never })).rejects.toThrow(
      new TypeError('startSvcServer(): apiRoutes must be an array of API routes (got undefined)'),
    )
    await expect(startSvcServer({ ...base, pages: undefined as never })).rejects.toThrow(
      /pages must be an array of pages; pass \[\] for none \(got undefined\)/,
    )
    await expect(startSvcServer({ ...base, port: 70000 })).rejects.toThrow(
      new RangeError('startSvcServer(): port must be a whole number from 0 to 65535 (got 70000)'),
    )
    await expect(startSvcServer({ ...base, port: 0, shutdownTimeoutMs: -1 })).rejects.toThrow(RangeError)
    await expect(startSvcServer({ ...base, port: 0, staticDirs: 'public' as never })).rejects.toThrow(/staticDirs must be an array/)
    await expect(startSvcServer({ ...base, port: 0, cache: { store: 'redis' as never } })).rejects.toThrow(
      /cache.store must be 'memory' or an object with get, set, delete and keys \(got "redis"\)/,
    )
    await expect(startSvcServer({ ...base, port: 0, bodyLimit: 1.5 })).rejects.toThrow(
      /bodyLimit must be a positive whole number of bytes \(got 1.5\)/,
    )
    await expect(startSvcServer({ ...base, port: 0, websocket: 1024 as never })).rejects.toThrow(
      new TypeError('startSvcServer(): websocket must be an object with maxMessageBytes and maxBufferedBytes (got 1024)'),
    )
    await expect(startSvcServer({ ...base, port: 0, websocket: { maxMessageBytes: 0 } })).rejects.toThrow(
      new RangeError('startSvcServer(): websocket.maxMessageBytes must be a positive whole number of bytes (got 0)'),
    )
    await expect(startSvcServer({ ...base, port: 0, websocket: { maxBufferedBytes: '8mb' as never } })).rejects.toThrow(
      /websocket.maxBufferedBytes must be a positive whole number of bytes \(got "8mb"\)/,
    )
  })

  it('refuses any request body over bodyLimit with 413, including bodies a handler reads itself', async () => {
    const server = await serve({
      bodyLimit: 1000,
      logger: recordingLogger(),
      apiRoutes: [{ path: '/api/upload', module: { POST: async (req) => ({ size: (await req.text()).length }) } }],
    })
    expect(await (await fetch(`${server.url}/api/upload`, { method: 'POST', body: 'x'.repeat(999) })).json()).toEqual({ size: 999 })
    const res = await fetch(`${server.url}/api/upload`, { method: 'POST', body: 'x'.repeat(5000) })
    expect(res.status).toBe(413)
    expect((await res.json()).code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('maxPayloadBytes: the runtime it creates takes task payloads that large, and request bodies may be that large', async () => {
    const server = await serve({
      maxPayloadBytes: 2 * 1024 * 1024,
      apiRoutes: [{ path: '/api/echo', module: { kind: 'task', POST: (ctx: { input: unknown }) => ctx.input } }],
    })
    expect(server.runtime.maxPayloadBytes).toBe(2 * 1024 * 1024)
    const post = (bytes: number) =>
      fetch(`${server.url}/__tasks/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify('z'.repeat(bytes - 2)),
      })
    // Past the default 1 MiB request body limit, within the payload limit.
    expect((await post(1.5 * 1024 * 1024)).status).toBe(202)
    const over = await post(2 * 1024 * 1024 + 1)
    expect(over.status).toBe(413)
    expect((await over.json()).code).toBe('PAYLOAD_TOO_LARGE')
    await expect(startSvcServer({ apiRoutes: [], pages: [], installSignalHandlers: false, port: 0, maxPayloadBytes: 0 })).rejects.toThrow(
      new RangeError('startSvcServer(): maxPayloadBytes must be a positive whole number of bytes (got 0)'),
    )
  })

  it('adds the stack to 500 bodies only with dev', async () => {
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/boom',
        module: {
          GET: () => {
            throw new Error('kaput')
          },
        },
      },
    ]
    const prod = await serve({ apiRoutes: routes, env: { NODE_ENV: 'production' } })
    expect(await (await fetch(`${prod.url}/api/boom`)).json()).toEqual({ error: 'Internal Server Error', code: 'INTERNAL_ERROR' })
    const dev = await serve({ apiRoutes: routes, dev: true })
    expect((await (await fetch(`${dev.url}/api/boom`)).json()).stack).toContain('kaput')
  })

  it('answers with standard reason phrases', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/x', module: { GET: () => new Response('made', { status: 201 }) } }] })
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('GET', '/api/x')
    const created = await conn.next()
    expect(created!.reason).toBe('Created')
    expect(created!.body).toBe('made')
    conn.send('GET', '/nowhere')
    expect((await conn.next())!.reason).toBe('Not Found')
    conn.close()
  })

  // With a declared length, the first chunk is part of the body, not all of it (src/node/response.ts).
  it.each([
    ['without a length', {}],
    ['with a declared Content-Length', { 'content-length': '12' }],
  ])('sends each chunk of a streamed body as it is produced, before the stream ends, %s', async (_, length) => {
    const gate = deferred()
    const encoder = new TextEncoder()
    const server = await serve({
      apiRoutes: [
        {
          path: '/api/stream',
          module: {
            GET: () =>
              new Response(
                new ReadableStream({
                  async start(controller) {
                    controller.enqueue(encoder.encode('first;'))
                    await gate.promise
                    controller.enqueue(encoder.encode('second'))
                    controller.close()
                  },
                }),
                { headers: { 'content-type': 'text/plain', ...length } },
              ),
          },
        },
      ],
    })
    const res = await fetch(`${server.url}/api/stream`)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    // The stream is held open until the first chunk has arrived.
    expect((await reader.read()).value).toBe('first;')
    gate.resolve()
    let rest = ''
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value
    expect(rest).toBe('second')
  })

  it('sends a whole body and its head on a keep-alive connection, answer after answer', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/n', module: { GET: (req) => ({ n: Number(req.query('n')) }) } }] })
    const conn = new RawConnection(server.port)
    await conn.ready()
    for (let n = 0; n < 3; n++) {
      conn.send('GET', `/api/n?n=${n}`)
      const answer = (await conn.next())!
      expect(answer.reason).toBe('OK')
      expect(JSON.parse(answer.body)).toEqual({ n })
    }
    conn.send('HEAD', '/api/n?n=9')
    expect((await conn.next())!.body).toBe('')
    expect(conn.closed).toBe(false)
    conn.close()
  })

  // Node hands CONNECT to a 'connect' listener and, without one, drops the
  // socket: the client saw a reset instead of an answer.
  it('answers CONNECT with 405 METHOD_NOT_ALLOWED and closes the connection, even when the client keeps its side open', async () => {
    const server = await serve()
    const serverSide = new Promise<Socket>((resolve) => server.server.once('connection', resolve))
    const socket = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true })
    let raw = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (raw += chunk))
    const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()))
    socket.write('CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n')
    await ended
    // The client never closes its side; the server lets the socket go anyway.
    const held = await serverSide
    await until(() => held.destroyed)
    socket.destroy()
    const [head, body] = raw.split('\r\n\r\n')
    const [statusLine, ...lines] = head.split('\r\n')
    expect(statusLine).toBe('HTTP/1.1 405 Method Not Allowed')
    expect(lines).toEqual(expect.arrayContaining(['connection: close', 'allow: ', 'content-type: application/json']))
    expect(JSON.parse(body)).toEqual({ error: expect.stringContaining('CONNECT'), code: 'METHOD_NOT_ALLOWED' })
  })
})

describe('the task runtime of the server', () => {
  const routes: RuntimeApiRoute[] = [{ path: '/api/nightly', module: { kind: 'task', schedule: '0 3 * * *', POST: () => 'ran' } }]

  it('is registered as the active runtime, so enqueue() dispatches in-process, until close()', async () => {
    const server = await serve({ apiRoutes: routes })
    expect(getActiveTaskRuntime()).toBe(server.runtime)
    await server.close()
    expect(getActiveTaskRuntime()).toBeUndefined()
  })

  it('starts the scheduler', async () => {
    const runtime = createTaskRuntime({ routes, logger: recordingLogger() })
    await serve({ apiRoutes: routes, runtime })
    expect(runtime.scheduledJobs()[0]).toMatchObject({ inProcess: true, nextRun: expect.any(String) })
  })

  for (const value of ['1', 'true']) {
    it(`leaves the scheduler off when SVC_DISABLE_IN_PROCESS_CRON=${value}`, async () => {
      const runtime = createTaskRuntime({ routes, logger: recordingLogger() })
      const server = await serve({ apiRoutes: routes, runtime, env: { NODE_ENV: 'test', SVC_DISABLE_IN_PROCESS_CRON: value } })
      expect(runtime.scheduledJobs()[0].inProcess).toBe(false)
      expect(server.logger.text()).toContain('in-process cron is off')
    })
  }
})

describe('reload', () => {
  it('swaps routes and pages without closing connections', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/v', module: { GET: () => 'one' } }] })
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('GET', '/api/v')
    expect((await conn.next())!.body).toBe('"one"')
    await server.reload({
      apiRoutes: [{ path: '/api/v', module: { GET: () => 'two' } }],
      pages: [{ path: '/p', module: { default: () => 'page' } }],
    })
    conn.send('GET', '/api/v')
    expect((await conn.next())!.body).toBe('"two"')
    conn.send('GET', '/p')
    expect((await conn.next())!.body).toBe('page')
    expect(conn.closed).toBe(false)
    conn.close()
  })

  it('keeps serving the old app when the new one is invalid', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/v', module: { GET: () => 'one' } }] })
    await expect(server.reload({ apiRoutes: [{ path: 'bad', module: {} }], pages: [] })).rejects.toThrow(TypeError)
    expect(await (await fetch(`${server.url}/api/v`)).json()).toBe('one')
  })

  it('re-registers task routes over the same run store', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/job', module: { kind: 'task', POST: () => 'v1' } }] })
    const first = server.runtime
    const before = await server.runtime.trigger('job')
    await server.runtime.waitForRun(before.id)
    await server.reload({ apiRoutes: [{ path: '/api/job', module: { kind: 'task', POST: () => 'v2' } }], pages: [] })
    expect(server.runtime).not.toBe(first)
    expect(getActiveTaskRuntime()).toBe(server.runtime)
    const after = await (await fetch(`${server.url}/__tasks/job`, { method: 'POST' })).json()
    expect((await server.runtime.waitForRun(after.id)).result).toBe('v2')
    // Runs from before the reload are still there.
    expect((await (await fetch(`${server.url}/__tasks/${before.id}`)).json()).result).toBe('v1')
  })
})

describe('closeWebSockets with a route filter', () => {
  it('closes only the sockets of the routes the filter accepts', async () => {
    const echo = { websocket: (peer: HotPeer) => void peer.on('message', (d) => peer.send(d)) }
    const server = await serve({
      apiRoutes: [
        { path: '/api/a', module: echo },
        { path: '/api/b', module: echo },
      ],
    })
    const open = (path: string) =>
      new Promise<WebSocket>((resolve) => {
        const ws = new WebSocket(`${server.url.replace('http', 'ws')}${path}`)
        ws.once('open', () => resolve(ws))
      })
    const a = await open('/api/a')
    const b = await open('/api/b')
    const codes: Record<string, number> = {}
    a.once('close', (code) => (codes.a = code))
    b.once('close', (code) => (codes.b = code))
    server.closeWebSockets(4100, 'reloaded', (route) => route === '/api/a')
    await until(() => codes.a)
    expect(codes).toEqual({ a: 4100 })
    b.send('still open')
    expect(await new Promise((resolve) => b.once('message', (d) => resolve(d.toString())))).toBe('still open')
    b.close()
  })
})
