import { describe, expect, it } from 'vitest'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { RawConnection, recordingLogger, serve, until } from './_helpers.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/hello', module: { GET: () => ({ hello: true }) } },
  { path: '/api/upload', module: { POST: async (req) => ({ size: (await req.text()).length }) } },
  { path: '/api/jobs/noop', kind: 'task', module: { POST: async () => 'done' } },
]

/** Writes a chunked request body (RFC 9112 §7.1) with no Content-Length, so the limit can only be found while reading. */
function sendChunked(conn: RawConnection, path: string, bytes: number): void {
  // The helper parses answers in the order of the methods it was told about.
  conn.send('POST', path, { 'transfer-encoding': 'chunked' })
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
