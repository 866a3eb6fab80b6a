/**
 * Fixed-path API routes are answered without Hono's dispatch (direct.ts);
 * these tests hold that the answer is the one Hono would give.
 */
import { describe, expect, it, vi } from 'vitest'
import { createSvcHandler, type RuntimeApiRoute, type SvcHandlerOptions } from '../../src/index.ts'
import { recordingLogger } from './_helpers.ts'

function handler(routes: RuntimeApiRoute[], options: Partial<SvcHandlerOptions> = {}) {
  const h = createSvcHandler({ routes, pages: [], env: {}, logger: recordingLogger(), ...options })
  const dispatched = vi.spyOn(h.app, 'fetch')
  const request = (path: string, init?: RequestInit) => h.fetch(new Request(`http://svc.test${path}`, init))
  return { h, dispatched, request }
}

const echo = {
  GET: (req: { path: string; routePath: string; param(): unknown; query(key: string): unknown }) => ({
    path: req.path,
    routePath: req.routePath,
    params: req.param(),
    q: req.query('q'),
  }),
}

describe('fixed-path routes', () => {
  it('are answered without Hono dispatching them, with the same request a handler sees through Hono', async () => {
    const { dispatched, request } = handler([
      { path: '/api/fixed', module: echo },
      { path: '/api/items/:id', module: echo },
    ])
    const res = await request('/api/fixed?q=1')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(await res.json()).toEqual({ path: '/api/fixed', routePath: '/api/fixed', params: {}, q: '1' })
    expect(dispatched).not.toHaveBeenCalled()

    expect(await (await request('/api/items/7?q=2')).json()).toEqual({
      path: '/api/items/7',
      routePath: '/api/items/:id',
      params: { id: '7' },
      q: '2',
    })
    expect(dispatched).toHaveBeenCalledTimes(1)
  })

  it('yield to a parameter route registered before them that matches the same path, as Hono does', async () => {
    const { request } = handler([
      { path: '/api/:name', module: { GET: (req) => ({ by: 'param', name: req.param('name') }) } },
      { path: '/api/me', module: { GET: () => ({ by: 'fixed' }) } },
      { path: '/api/v2/me', module: { GET: () => ({ by: 'fixed' }) } },
      { path: '/api/v2/:name', module: { GET: (req) => ({ by: 'param', name: req.param('name') }) } },
    ])
    expect(await (await request('/api/me')).json()).toEqual({ by: 'param', name: 'me' })
    expect(await (await request('/api/v2/me')).json()).toEqual({ by: 'fixed' })
  })

  it('still pass through global hooks', async () => {
    const seen: string[] = []
    const { request } = handler([{ path: '/api/fixed', module: { GET: () => (seen.push('handler'), 'ok') } }], {
      globalHooks: {
        onRequest: [(req) => (req.headers.get('authorization') ? undefined : new Response('login first', { status: 401 }))],
        onResponse: [(_req, res) => void seen.push(`response ${res.status}`)],
      },
    })
    expect((await request('/api/fixed')).status).toBe(401)
    expect(await (await request('/api/fixed', { headers: { authorization: 'yes' } })).json()).toBe('ok')
    expect(seen).toEqual(['response 401', 'handler', 'response 200'])
  })

  it('answer HEAD as GET without the body, and a method the route lacks with 405 and Allow', async () => {
    const { request } = handler([{ path: '/api/fixed', module: echo }])
    const head = await request('/api/fixed', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toBe('application/json')
    expect(await head.text()).toBe('')
    const post = await request('/api/fixed', { method: 'POST' })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
    expect((await post.json()).code).toBe('METHOD_NOT_ALLOWED')
  })

  it('hand a thrown error to onError hooks with the request, and log the method and path of a 500', async () => {
    const hooked: string[] = []
    const logger = recordingLogger()
    const { request } = handler(
      [
        {
          path: '/api/boom',
          module: {
            GET: () => {
              throw new Error('boom')
            },
          },
        },
      ],
      { logger, globalHooks: { onError: [(error, req) => void hooked.push(`${(error as Error).message} ${new URL(req.url).pathname}`)] } },
    )
    const res = await request('/api/boom')
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual({ error: 'Internal Server Error', code: 'INTERNAL_ERROR' })
    expect(hooked).toEqual(['boom /api/boom'])
    expect(logger.text('error')).toContain('GET /api/boom failed')
  })
})
