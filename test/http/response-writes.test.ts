/**
 * How the Node server puts answers on the socket (src/node/response.ts): a
 * whole body leaves with its head in one write. A streamed body with a
 * declared length is sent as it comes: server.test.ts.
 */
import type { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { RawConnection, serve } from './_helpers.ts'

/** Counts the writes the server makes on each socket it accepts: one chunk, or several gathered (writev). */
function countWrites(server: Awaited<ReturnType<typeof serve>>): { writes: string[] } {
  const seen = { writes: [] as string[] }
  server.server.on('connection', (socket: Socket) => {
    const write = socket._write.bind(socket)
    const writev = socket._writev!.bind(socket)
    socket._write = (chunk, encoding, cb) => {
      seen.writes.push('write')
      write(chunk, encoding, cb)
    }
    socket._writev = (chunks, cb) => {
      seen.writes.push('writev')
      writev(chunks, cb)
    }
  })
  return seen
}

describe('writing answers', () => {
  it('sends the head and body of a JSON answer in one write, answer after answer on a keep-alive connection', async () => {
    const server = await serve({ apiRoutes: [{ path: '/api/hello', module: { GET: () => ({ hello: 'world' }) } }] })
    const seen = countWrites(server)
    const conn = new RawConnection(server.port)
    await conn.ready()
    for (let i = 0; i < 3; i++) {
      conn.send('GET', '/api/hello')
      const answer = (await conn.next())!
      expect(answer.status).toBe(200)
      expect(answer.headers['content-length']).toBe('17')
      expect(answer.body).toBe('{"hello":"world"}')
    }
    expect(seen.writes).toEqual(['write', 'write', 'write'])
    conn.close()
  })

  it('sends a bytes body whose Content-Length the handler set, and keeps the connection for the next request', async () => {
    const body = new TextEncoder().encode('héllo')
    const server = await serve({
      apiRoutes: [
        {
          path: '/api/bytes',
          module: { GET: () => new Response(body, { headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': '6' } }) },
        },
      ],
    })
    const conn = new RawConnection(server.port)
    await conn.ready()
    for (let i = 0; i < 2; i++) {
      conn.send('GET', '/api/bytes')
      const answer = (await conn.next())!
      expect(answer.headers['content-length']).toBe('6')
      expect(Buffer.from(answer.body, 'latin1').toString('utf8')).toBe('héllo')
    }
    conn.send('HEAD', '/api/bytes')
    const head = (await conn.next())!
    expect(head.headers['content-length']).toBe('6')
    expect(head.body).toBe('')
    expect(conn.closed).toBe(false)
    conn.close()
  })

  it('a streamed body longer than its declared Content-Length sends the declared bytes and keeps the server up', async () => {
    const encode = (text: string) => new TextEncoder().encode(text)
    const server = await serve({
      apiRoutes: [
        {
          path: '/api/overlong',
          module: {
            GET: () =>
              new Response(
                new ReadableStream({
                  start(controller) {
                    controller.enqueue(encode('hello'))
                    controller.enqueue(encode(' and more'))
                    controller.close()
                  },
                }),
                { headers: { 'content-length': '5' } },
              ),
          },
        },
        { path: '/api/hello', module: { GET: () => ({ hello: 'world' }) } },
      ],
    })
    const conn = new RawConnection(server.port)
    await conn.ready()
    conn.send('GET', '/api/overlong')
    const answer = (await conn.next())!
    expect(answer.status).toBe(200)
    expect(answer.body).toBe('hello')
    // The bytes past the declared length are not sent: the next answer on the connection is whole.
    conn.send('GET', '/api/hello')
    expect((await conn.next())!.body).toBe('{"hello":"world"}')
    conn.close()
  })
})
