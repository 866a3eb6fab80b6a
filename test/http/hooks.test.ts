import { describe, expect, it } from 'vitest'
import { createApiApp, createSvcHandler, type GlobalHooks, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger } from './_helpers.ts'

const routes: RuntimeApiRoute[] = [
  { path: '/api/hello', module: { GET: () => ({ hello: 'world' }) } },
  {
    path: '/api/boom',
    module: {
      GET: () => {
        throw new Error('boom')
      },
    },
  },
  { path: '/api/report', module: { route: { kind: 'task' }, POST: () => 1 } },
]

describe('global hooks', () => {
  it('runs onRequest hooks in order before the handler', async () => {
    const order: string[] = []
    const app = createApiApp({
      routes: [{ path: '/api/x', module: { GET: () => (order.push('handler'), 'ok') } }],
      globalHooks: { onRequest: [() => void order.push('first'), async () => void order.push('second')] },
    })
    await app.request('/api/x')
    expect(order).toEqual(['first', 'second', 'handler'])
  })

  it('lets onRequest answer with a Response, skipping later hooks and the handler', async () => {
    const seen: string[] = []
    const app = createApiApp({
      routes: [{ path: '/api/x', module: { GET: () => (seen.push('handler'), 'ok') } }],
      globalHooks: {
        onRequest: [
          (req) => (req.headers.get('cookie') === 'session=ok' ? undefined : new Response('login first', { status: 401 })),
          () => void seen.push('second'),
        ],
      },
    })
    const denied = await app.request('/api/x')
    expect(denied.status).toBe(401)
    expect(seen).toEqual([])
    const allowed = await app.request('/api/x', { headers: { cookie: 'session=ok' } })
    expect(allowed.status).toBe(200)
    expect(seen).toEqual(['second', 'handler'])
  })

  it('gives onError the error and the request, and sends the first Response it returns', async () => {
    const errors: string[] = []
    const app = createApiApp({
      routes,
      logger: recordingLogger(),
      globalHooks: {
        onError: [
          (error, req) => void errors.push(`${(error as Error).message} ${new URL(req.url).pathname}`),
          (error) => Response.json({ handled: (error as Error).message }, { status: 503 }),
          () => new Response('never'),
        ],
      },
    })
    const res = await app.request('/api/boom')
    expect(res.status).toBe(503)
    expect(await res.json()).toEqual({ handled: 'boom' })
    expect(errors).toEqual(['boom /api/boom'])
  })

  it('routes errors thrown by onRequest hooks to onError', async () => {
    const app = createApiApp({
      routes,
      globalHooks: {
        onRequest: [
          () => {
            throw new Error('auth backend down')
          },
        ],
        onError: [(error) => new Response(`caught: ${(error as Error).message}`, { status: 502 })],
      },
    })
    const res = await app.request('/api/hello')
    expect(res.status).toBe(502)
    expect(await res.text()).toBe('caught: auth backend down')
  })

  it('falls back to 500 INTERNAL_ERROR when no onError hook answers, and logs a failing hook', async () => {
    const logger = recordingLogger()
    const app = createApiApp({
      routes,
      logger,
      globalHooks: {
        onError: [
          () => {
            throw new Error('hook broke')
          },
        ],
      },
    })
    const res = await app.request('/api/boom')
    expect(res.status).toBe(500)
    expect((await res.json()).code).toBe('INTERNAL_ERROR')
    expect(logger.text()).toContain('onError hook failed')
  })

  it('gives onResponse every response with its duration, and lets each hook replace it', async () => {
    const seen: { path: string; status: number; durationMs: number }[] = []
    const hooks: GlobalHooks = {
      onResponse: [
        (req, res, info) => void seen.push({ path: new URL(req.url).pathname, status: res.status, durationMs: info.durationMs }),
        (_req, res) => {
          const copy = new Response(res.body, res)
          copy.headers.set('x-served-by', 'svc')
          return copy
        },
        (_req, res) => void seen.push({ path: 'second', status: res.headers.get('x-served-by') === 'svc' ? 1 : 0, durationMs: 0 }),
      ],
    }
    const app = createApiApp({ routes, globalHooks: hooks, logger: recordingLogger() })
    const ok = await app.request('/api/hello')
    expect(ok.headers.get('x-served-by')).toBe('svc')
    expect(await ok.json()).toEqual({ hello: 'world' })
    const missing = await app.request('/api/missing')
    expect(missing.status).toBe(404)
    expect(missing.headers.get('x-served-by')).toBe('svc')
    await app.request('/api/boom')
    expect(seen.filter((s) => s.path !== 'second').map((s) => [s.path, s.status])).toEqual([
      ['/api/hello', 200],
      ['/api/missing', 404],
      ['/api/boom', 500],
    ])
    expect(seen.every((s) => typeof s.durationMs === 'number' && s.durationMs >= 0)).toBe(true)
    expect(seen.filter((s) => s.path === 'second').map((s) => s.status)).toEqual([1, 1, 1])
  })

  it('runs onResponse for an onRequest short-circuit too', async () => {
    const statuses: number[] = []
    const app = createApiApp({
      routes,
      globalHooks: { onRequest: [() => new Response(null, { status: 401 })], onResponse: [(_q, res) => void statuses.push(res.status)] },
    })
    await app.request('/api/hello')
    expect(statuses).toEqual([401])
  })

  it('does not run hooks for /__health, /__tasks or /__svc/revalidate, which have their own auth', async () => {
    const seen: string[] = []
    const hooks: GlobalHooks = {
      onRequest: [(req) => (seen.push(new URL(req.url).pathname), new Response('blocked', { status: 401 }))],
    }
    // A hybrid page gives the revalidate endpoint something to purge, so it is mounted.
    const pages = [{ path: '/cached', mode: 'hybrid' as const, module: { default: () => 'cached' } }]
    const handler = createSvcHandler({ routes, pages, globalHooks: hooks, env: { NODE_ENV: 'test' }, logger: recordingLogger() })
    // A loopback peer in a test environment may use the admin surface without a secret.
    const get = (path: string, init?: RequestInit) =>
      handler.fetch(new Request(`http://localhost${path}`, init), { remoteAddress: '127.0.0.1' })
    expect((await get('/__health')).status).toBe(200)
    expect((await get('/__tasks')).status).toBe(200)
    const json = { 'content-type': 'application/json' }
    expect((await get('/__svc/revalidate', { method: 'POST', headers: json, body: '{"paths":["/"]}' })).status).toBe(200)
    expect(seen).toEqual([])
    expect((await get('/api/hello')).status).toBe(401)
    expect(seen).toEqual(['/api/hello'])
  })
})
