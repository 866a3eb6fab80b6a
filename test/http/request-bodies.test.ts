import { execFile } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { defineSchema, type RuntimeApiRoute } from '../../src/index.ts'
import { LINGER_BYTES } from '../../src/node/linger.ts'
import { RawConnection, recordingLogger, serve, until } from './_helpers.ts'

let served = 0
const routes: RuntimeApiRoute[] = [
  { path: '/api/hello', module: { GET: () => ({ hello: true }) } },
  { path: '/api/count', module: { GET: () => ({ served: ++served }) } },
  { path: '/api/upload', module: { POST: async (req) => ({ size: (await req.text()).length }) } },
  { path: '/api/jobs/noop', kind: 'task', module: { POST: async () => 'done' } },
  { path: '/api/notes', module: { schema: defineSchema({ body: v.object({ text: v.string() }) }), POST: (req) => req.valid('json') } },
]

const MiB = 1024 * 1024
const CHUNK = new Uint8Array(64 * 1024).fill(0x78)

interface Upload {
  status?: number
  body?: string
  error?: string
}

/**
 * Uploads `bytes` with node:http as a chunked body, writing as fast as the
 * server takes it. An error after the answer is reported too: it means the
 * server reset the connection while the client was still sending.
 */
function uploadWithNodeHttp(url: string, bytes: number): Promise<Upload> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json' } })
    const result: Upload = {}
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => (body += chunk))
      res.on('end', () => Object.assign(result, { status: res.statusCode, body }))
    })
    req.on('error', (error: NodeJS.ErrnoException) => (result.error ??= error.code ?? error.message))
    req.on('close', () => resolve(result))
    let sent = 0
    const write = () => {
      while (sent < bytes && !req.destroyed) {
        sent += CHUNK.length
        if (!req.write(CHUNK)) return void req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

const fetchClient = fileURLToPath(new URL('../fixtures/upload-client.mjs', import.meta.url))

/**
 * Uploads `bytes` with fetch (undici, a stream body with `duplex: 'half'`)
 * `attempts` times from a child process, which races the server as a client
 * across a network does; in this process undici reads the answer first anyway.
 */
function uploadWithFetch(url: string, bytes: number, attempts: number): Promise<Upload[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [fetchClient, url, String(bytes), String(attempts)], (error, stdout) => {
      if (error) reject(error)
      else resolve(JSON.parse(stdout) as Upload[])
    })
  })
}

const tooLarge = { status: 413, body: expect.stringContaining('"code":"PAYLOAD_TOO_LARGE"') }

/** Writes a chunked request body (RFC 9112 §7.1) with no Content-Length, so the limit can only be found while reading. */
function sendChunked(conn: RawConnection, path: string, bytes: number): void {
  // The helper parses answers in the order of the methods it was told about.
  conn.send('POST', path, { 'transfer-encoding': 'chunked', 'content-type': 'application/json' })
  const chunk = 'x'.repeat(64 * 1024)
  for (let sent = 0; sent < bytes; sent += chunk.length) conn.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
  conn.socket.write('0\r\n\r\n')
}

describe('request bodies the server stops reading', () => {
  // A body abandoned half-read stays in the connection: the next request on it
  // would wait behind bytes nobody reads. The answer must end the connection instead.
  it('closes the connection after a 413 from a handler that read past the limit', async () => {
    const server = await serve({ apiRoutes: routes, logger: recordingLogger() })
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('POST', '/api/upload', {}, 'x'.repeat(2 * 1024 * 1024))
    const res = await conn.next()
    expect(res!.status).toBe(413)
    expect(res!.headers.connection).toBe('close')
    await until(() => conn.closed)
  })

  it('closes the connection after a 413 for a chunked task payload over the limit', async () => {
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' }, logger: recordingLogger() })
    const conn = new RawConnection(server.port)
    await conn.ready()
    sendChunked(conn, '/__tasks/jobs.noop', 2 * 1024 * 1024)
    const res = await conn.next()
    expect(res!.status).toBe(413)
    expect(JSON.parse(res!.body).code).toBe('PAYLOAD_TOO_LARGE')
    expect(res!.headers.connection).toBe('close')
    await until(() => conn.closed)
  })

  it('keeps the connection alive when the whole body arrived, read or not', async () => {
    const server = await serve({ apiRoutes: routes, logger: recordingLogger() })
    const conn = new RawConnection(server.port)
    await conn.ready()
    // 405: the route has no POST, so nothing reads this small body.
    conn.send('POST', '/api/hello', {}, '{"small":true}')
    const refused = await conn.next()
    expect(refused!.status).toBe(405)
    expect(refused!.headers.connection).toBe('keep-alive')
    conn.send('GET', '/api/hello')
    const next = await conn.next()
    expect(next!.status).toBe(200)
    expect(JSON.parse(next!.body)).toEqual({ hello: true })
    conn.close()
  })
})

// A client still sending its body when the server answers and closes gets a
// reset, which can cost it the answer (RFC 9112 §9.6). The server half-closes,
// reads and drops the rest of the body for a bounded time and size, then closes.
describe('a body over the limit, still arriving when the 413 is sent', () => {
  const targets = [
    { name: 'a chunked task payload', path: '/__tasks/jobs.noop' },
    { name: 'a chunked body of a schema.body route', path: '/api/notes' },
  ]

  for (const { name, path } of targets) {
    it(`lets a node:http client read the 413 of ${name} and finish without a reset`, async () => {
      const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' } })
      // Four times the default 1 MiB limit.
      expect(await uploadWithNodeHttp(`${server.url}${path}`, 4 * MiB)).toEqual(tooLarge)
    })

    it(`lets a fetch client read the 413 of ${name}, every time`, async () => {
      const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' } })
      const results = await uploadWithFetch(`${server.url}${path}`, 4 * MiB, 10)
      expect(results).toEqual(Array.from({ length: 10 }, () => tooLarge))
    })
  }

  it('stops reading a client that keeps sending once the lingering budget is spent', async () => {
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' } })
    const sockets: Socket[] = []
    server.server.on('connection', (socket) => sockets.push(socket))
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('POST', '/__tasks/jobs.noop', { 'transfer-encoding': 'chunked', 'content-type': 'application/json' })
    const frame = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')])
    // Writes without end (up to 64 MiB, well past the budget) until the server closes.
    let sent = 0
    const pump = () => {
      while (!conn.closed && sent < 64 * MiB) {
        sent += CHUNK.length
        if (!conn.socket.write(frame)) return void conn.socket.once('drain', pump)
      }
    }
    pump()
    const res = await conn.next()
    expect(res!.status).toBe(413)
    await until(() => sockets.length === 1 && sockets[0].destroyed)
    // What the server read: the part before the answer (the 1 MiB limit and
    // what the stream had buffered), then at most the budget.
    expect(sockets[0].bytesRead).toBeLessThan(LINGER_BYTES + 2 * MiB)
    // The server closed the connection; the client did not run out of body.
    await until(() => conn.closed)
    expect(sent).toBeLessThan(64 * MiB)
  })

  it('does not serve a request sent after the over-limit body on the same connection', async () => {
    const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'test' } })
    const before = served
    const conn = new RawConnection(server.port)
    await conn.ready()
    sendChunked(conn, '/__tasks/jobs.noop', 2 * MiB)
    conn.send('GET', '/api/count')
    const res = await conn.next()
    expect(res!.status).toBe(413)
    // RFC 9112 §9.6: after an answer with "close", further requests are not processed.
    expect(await conn.next()).toBeNull()
    expect(served).toBe(before)
  })
})
