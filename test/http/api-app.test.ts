import { describe, expect, it } from 'vitest'
import { createApiApp, StoreFullError, TaskNotFoundError, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger, serve } from './_helpers.ts'

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/users/:id',
    module: {
      GET: (req) => ({ id: req.param('id'), q: req.query('q') ?? null }),
      PUT: async (req, reply) =>
        reply
          .status(201)
          .header('x-updated', 'yes')
          .json(await req.json()),
    },
  },
  { path: '/api/text', module: { GET: (_req, reply) => reply.text('plain') } },
  { path: '/api/html', module: { GET: (_req, reply) => reply.html('<p>hi</p>') } },
  { path: '/api/go', module: { GET: (_req, reply) => reply.redirect('/api/text', 307) } },
  { path: '/api/raw', module: { GET: () => new Response('raw body', { status: 418, headers: { 'x-raw': '1' } }) } },
  { path: '/api/nothing', module: { DELETE: () => undefined } },
  { path: '/api/built', module: { POST: (_req, reply) => void reply.status(202).json({ queued: true }) } },
  { path: '/api/status-only', module: { GET: (_req, reply) => (reply.status(201), { made: 1 }) } },
  {
    path: '/api/cookies',
    module: { GET: (_req, reply) => reply.header('set-cookie', 'a=1').header('set-cookie', 'b=2').json(null) },
  },
  { path: '/api/files/:rest*', module: { GET: (req) => ({ rest: req.param('rest') }) } },
  {
    path: '/api/head',
    module: { GET: () => ({ big: 'x'.repeat(100) }), HEAD: () => new Response(null, { headers: { 'x-head': 'own' } }) },
  },
  {
    path: '/api/boom',
    module: {
      GET: () => {
        throw new Error('database password is hunter2')
      },
    },
  },
  {
    path: '/api/async-boom',
    module: {
      GET: async () => {
        throw new Error('later')
      },
    },
  },
  {
    path: '/api/known',
    module: {
      GET: () => {
        throw new TaskNotFoundError('nope', ['a'])
      },
    },
  },
  {
    path: '/api/full',
    module: {
      POST: () => {
        throw new StoreFullError('MemoryRunStore', 2)
      },
    },
  },
  {
    path: '/api/thrown-response',
    module: {
      GET: () => {
        throw new Response('teapot', { status: 418 })
      },
    },
  },
  { path: '/api/report', module: { route: { kind: 'task' }, POST: () => 'task ran' } },
  { path: '/api/jobs/notify', kind: 'task', module: { POST: () => 'task ran' } },
]

function app(extra: Parameters<typeof createApiApp>[0] extends infer O ? Partial<O> : never = {}) {
  return createApiApp({ routes, logger: recordingLogger(), env: { NODE_ENV: 'production' }, ...extra })
}

describe('createApiApp handlers', () => {
  it('passes route params and the query through Hono’s request', async () => {
    const res = await app().request('/api/users/42?q=hi')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(await res.json()).toEqual({ id: '42', q: 'hi' })
  })

  it('builds responses with reply: status is chainable and headers stick', async () => {
    const res = await app().request('/api/users/1', {
      method: 'PUT',
      body: '{"name":"Ada"}',
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(201)
    expect(res.headers.get('x-updated')).toBe('yes')
    expect(await res.json()).toEqual({ name: 'Ada' })
  })

  it('sends text, html and redirects with their content types', async () => {
    const a = app()
    const text = await a.request('/api/text')
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(await text.text()).toBe('plain')
    const html = await a.request('/api/html')
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const go = await a.request('/api/go')
    expect(go.status).toBe(307)
    expect(go.headers.get('location')).toBe('/api/text')
  })

  it('sends a returned Response untouched', async () => {
    const res = await app().request('/api/raw')
    expect(res.status).toBe(418)
    expect(res.headers.get('x-raw')).toBe('1')
    expect(await res.text()).toBe('raw body')
  })

  it('answers 204 when a handler returns nothing, and the reply it built when it built one', async () => {
    const a = app()
    const none = await a.request('/api/nothing', { method: 'DELETE' })
    expect(none.status).toBe(204)
    expect(await none.text()).toBe('')
    const built = await a.request('/api/built', { method: 'POST' })
    expect(built.status).toBe(202)
    expect(await built.json()).toEqual({ queued: true })
  })

  it('sends a plain return value as JSON with the status set on reply', async () => {
    const res = await app().request('/api/status-only')
    expect(res.status).toBe(201)
    expect(await res.json()).toEqual({ made: 1 })
  })

  it('appends set-cookie headers instead of replacing them', async () => {
    const res = await app().request('/api/cookies')
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
  })

  it('gives a catch-all route the rest of the path as one param', async () => {
    const res = await app().request('/api/files/a/b/c.txt')
    expect(await res.json()).toEqual({ rest: 'a/b/c.txt' })
    expect((await app().request('/api/files')).status).toBe(404)
  })

  it('answers HEAD with the GET handler and no body, unless the file exports HEAD', async () => {
    const a = createApiApp({ routes: [{ path: '/api/only-get', module: { GET: () => ({ a: 1 }) } }, ...routes] })
    const viaGet = await a.request('/api/only-get', { method: 'HEAD' })
    expect(viaGet.status).toBe(200)
    expect(viaGet.headers.get('content-type')).toBe('application/json')
    expect(await viaGet.text()).toBe('')
    const own = await a.request('/api/head', { method: 'HEAD' })
    expect(own.headers.get('x-head')).toBe('own')
  })
})

describe('createApiApp errors', () => {
  it('answers an unknown path with 404 NOT_FOUND', async () => {
    const res = await app().request('/api/missing')
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({ error: 'No route matches GET /api/missing', code: 'NOT_FOUND' })
  })

  it('answers a method the file does not export with 405 and an Allow header', async () => {
    const res = await app().request('/api/users/1', { method: 'DELETE' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD, PUT')
    expect((await res.json()).code).toBe('METHOD_NOT_ALLOWED')
  })

  it('answers an unhandled error with 500 INTERNAL_ERROR, without message or stack outside development', async () => {
    const logger = recordingLogger()
    const a = app({ logger })
    for (const path of ['/api/boom', '/api/async-boom']) {
      const res = await a.request(path)
      expect(res.status).toBe(500)
      const body = await res.json()
      expect(body).toEqual({ error: 'Internal Server Error', code: 'INTERNAL_ERROR' })
    }
    expect(logger.text()).toContain('GET /api/boom failed')
    expect(logger.text()).toContain('hunter2')
  })

  it('includes the message and stack in development', async () => {
    const res = await app({ env: { NODE_ENV: 'development' } }).request('/api/boom')
    const body = await res.json()
    expect(body.code).toBe('INTERNAL_ERROR')
    expect(body.error).toBe('database password is hunter2')
    expect(body.stack).toContain('Error: database password is hunter2')
  })

  it('maps errors that carry a status and code to them', async () => {
    const res = await app().request('/api/known')
    expect(res.status).toBe(404)
    expect((await res.json()).code).toBe('TASK_NOT_FOUND')
  })

  it('answers a full run store with 503 STORE_FULL and Retry-After, so a route that enqueues needs no mapping of its own', async () => {
    const res = await app().request('/api/full', { method: 'POST' })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('30')
    expect((await res.json()).code).toBe('STORE_FULL')
  })

  it('sends a thrown Response as the answer', async () => {
    const res = await app().request('/api/thrown-response')
    expect(res.status).toBe(418)
    expect(await res.text()).toBe('teapot')
  })
})

describe('createApiApp built-ins and route kinds', () => {
  it('skips task routes: they are not HTTP endpoints', async () => {
    const a = app()
    expect((await a.request('/api/report', { method: 'POST' })).status).toBe(404)
    expect((await a.request('/api/jobs/notify', { method: 'POST' })).status).toBe(404)
  })

  it('serves GET /__health with { ok: true, framework: "svc" } and no credentials', async () => {
    const res = await app().request('/__health')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, framework: 'svc' })
  })

  it('mounts POST /__svc/revalidate only when revalidateWebhook is given', async () => {
    expect((await app().request('/__svc/revalidate', { method: 'POST' })).status).toBe(404)
    const seen: unknown[] = []
    const a = app({
      env: { SVC_TASK_SECRET: 's3cret' },
      revalidateWebhook: async (req) => {
        seen.push(await req.json())
        return { status: 200, body: { purged: 3 } }
      },
    })
    const denied = await a.request('/__svc/revalidate', { method: 'POST', body: '{}' })
    expect(denied.status).toBe(401)
    expect(seen).toEqual([])
    const res = await a.request('/__svc/revalidate', {
      method: 'POST',
      body: '{"tags":["posts"]}',
      headers: { authorization: 'Bearer s3cret', 'content-type': 'application/json' },
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ purged: 3 })
    expect(seen).toEqual([{ tags: ['posts'] }])
  })

  it('reads the revalidate secret from the env argument of fetch (edge bindings)', async () => {
    const a = createApiApp({ routes: [], env: {}, revalidateWebhook: async () => ({ status: 204 }) })
    const req = () => new Request('http://x/__svc/revalidate', { method: 'POST', headers: { authorization: 'Bearer from-binding' } })
    expect((await a.fetch(req(), {})).status).toBe(401)
    expect((await a.fetch(req(), { SVC_TASK_SECRET: 'from-binding' })).status).toBe(204)
  })

  it('answers a hot route’s handshake with 426 when the host cannot hold WebSockets', async () => {
    const a = createApiApp({ routes: [{ path: '/api/chat', module: { websocket: () => {} } }] })
    const res = await a.request('/api/chat', { headers: { upgrade: 'websocket', connection: 'Upgrade' } })
    expect(res.status).toBe(426)
    expect((await res.json()).code).toBe('UPGRADE_REQUIRED')
    const plain = await a.request('/api/chat')
    expect(plain.status).toBe(426)
    expect(plain.headers.get('upgrade')).toBe('websocket')
  })
})

describe('createApiApp options', () => {
  it('rejects bad options with the option name and the value it got', () => {
    expect(() => createApiApp(undefined as never)).toThrow(
      new TypeError('createApiApp(): options must be an object with routes (got undefined)'),
    )
    expect(() => createApiApp({ routes: 'x' as never })).toThrow(/routes must be an array of API routes \(got "x"\)/)
    expect(() => createApiApp({ routes: [], bodyLimit: -1 })).toThrow(RangeError)
    expect(() => createApiApp({ routes: [], revalidateWebhook: 1 as never })).toThrow(/revalidateWebhook must be a function \(got 1\)/)
    expect(() => createApiApp({ routes: [], globalHooks: { onRequest: 'x' } as never })).toThrow(
      /globalHooks.onRequest must be an array of functions/,
    )
    expect(() => createApiApp({ routes: [], globalHooks: { before: [] } as never })).toThrow(/unknown hook "before"/)
    expect(() => createApiApp({ routes: [{ path: 'api', module: {} }] })).toThrow(/routes\[0\]\.path must be a URL path/)
    expect(() => createApiApp({ routes: [{ path: '/api/x', module: { GET: 'nope' as never } }] })).toThrow(
      /the GET export must be a function \(got "nope"\)/,
    )
  })

  it('refuses a bare schema export and says how to wrap it', () => {
    const bare = { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } }
    expect(() => createApiApp({ routes: [{ path: '/api/x', module: { schema: bare as never, GET: () => 1 } }] })).toThrow(
      /defineSchema\(\) object; wrap it: defineSchema\(\{ body: schema \}\)/,
    )
  })

  it('rejects reply misuse with a RangeError naming the bad value', async () => {
    const a = createApiApp({
      routes: [{ path: '/api/bad', module: { GET: (_req, reply) => reply.status(99) } }],
      logger: recordingLogger(),
      env: { NODE_ENV: 'development' },
    })
    const res = await a.request('/api/bad')
    expect(res.status).toBe(500)
    expect((await res.json()).error).toBe('reply.status(code): code must be an integer from 200 to 599 (got 99)')
  })
})

// Fetch forbids a body with 204, 205 and 304 (Fetch standard, "null body
// status"): Response throws. A reply built with one of them must drop the
// body, the same on every target.
const noBodyRoutes: RuntimeApiRoute[] = [
  { path: '/api/json', module: { DELETE: (_req, reply) => reply.status(204).json({ deleted: true }) } },
  { path: '/api/text', module: { DELETE: (_req, reply) => reply.text('', 204) } },
  { path: '/api/reset', module: { POST: (_req, reply) => reply.html('<p>done</p>', 205) } },
  {
    path: '/api/value',
    module: {
      GET: (_req, reply) => {
        reply.status(304).header('etag', '"v1"')
        return { unchanged: true }
      },
    },
  },
]

const noBodyCases = [
  ['DELETE', '/api/json', 204],
  ['DELETE', '/api/text', 204],
  ['POST', '/api/reset', 205],
  ['GET', '/api/value', 304],
] as const

describe('reply with a status that has no body', () => {
  it('answer with that status and no body from a Web fetch handler (edge and function targets)', async () => {
    const logger = recordingLogger()
    const app = createApiApp({ routes: noBodyRoutes, logger })
    for (const [method, path, status] of noBodyCases) {
      const res = await app.fetch(new Request(`http://svc${path}`, { method }))
      expect(res.status, path).toBe(status)
      expect(await res.text(), path).toBe('')
    }
    expect(logger.lines).toEqual([])
  })

  it('answer the same behind startSvcServer', async () => {
    const server = await serve({ apiRoutes: noBodyRoutes })
    for (const [method, path, status] of noBodyCases) {
      const res = await fetch(`${server.url}${path}`, { method })
      expect(res.status, path).toBe(status)
      expect(await res.text(), path).toBe('')
    }
    const unchanged = await fetch(`${server.url}/api/value`)
    expect(unchanged.headers.get('etag')).toBe('"v1"')
  })
})
