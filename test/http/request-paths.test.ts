/**
 * The path the Node server routes by, for request targets as clients write
 * them on the wire (RFC 9112 §3.2): the server reads plain targets without
 * building the URL, and every other target must route as its parsed URL does.
 */
import { describe, expect, it } from 'vitest'
import type { RuntimeApiRoute } from '../../src/index.ts'
import { RawConnection, serve } from './_helpers.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/users/:id', module: { GET: (req) => ({ id: req.param('id'), q: req.query('q') ?? null, path: req.path }) } },
  { path: '/api/files/:rest*', module: { GET: (req) => ({ rest: req.param('rest') }) } },
]

async function getRaw(port: number, target: string): Promise<{ status: number; body: any }> {
  const conn = new RawConnection(port)
  try {
    await conn.ready()
    conn.send('GET', target)
    const res = await conn.next()
    if (!res) throw new Error(`no answer to GET ${target}`)
    // The connection reads bytes as latin1; the JSON body is UTF-8.
    return { status: res.status, body: res.body ? JSON.parse(Buffer.from(res.body, 'latin1').toString('utf8')) : null }
  } finally {
    conn.close()
  }
}

describe('request targets on the Node server', () => {
  it('route a plain target by its path, without the query', async () => {
    const server = await serve({ apiRoutes: routes })
    expect(await getRaw(server.port, '/api/users/42?q=hi')).toEqual({ status: 200, body: { id: '42', q: 'hi', path: '/api/users/42' } })
  })

  it('keep an escaped slash inside its segment and decode the param', async () => {
    const server = await serve({ apiRoutes: routes })
    expect(await getRaw(server.port, '/api/users/a%2Fb')).toEqual({ status: 200, body: { id: 'a/b', q: null, path: '/api/users/a%2Fb' } })
    expect(await getRaw(server.port, '/api/files/x/caf%C3%A9.txt')).toEqual({ status: 200, body: { rest: 'x/café.txt' } })
  })

  it('resolve dot segments, escaped or not, before routing (RFC 3986 §5.2.4)', async () => {
    const server = await serve({ apiRoutes: routes })
    expect((await getRaw(server.port, '/api/files/../users/7')).body).toMatchObject({ id: '7', path: '/api/users/7' })
    expect((await getRaw(server.port, '/api/files/%2e%2e/users/8')).body).toMatchObject({ id: '8', path: '/api/users/8' })
  })

  it('route an absolute-form target by its path', async () => {
    const server = await serve({ apiRoutes: routes })
    expect(await getRaw(server.port, `http://localhost:${server.port}/api/users/9?q=abs`)).toEqual({
      status: 200,
      body: { id: '9', q: 'abs', path: '/api/users/9' },
    })
  })
})
