import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  createSvcHandler,
  type CacheEntry,
  type CacheStore,
  type RuntimePage,
  type SvcHandlerOptions,
  type SvcRequest,
} from '../../src/index.ts'
import { deferred, recordingLogger, serve, sleep, until } from './_helpers.ts'

const SECRET = 'pages-secret-0123456789abcdef0123456'
const auth = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
const env = { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }

/** A page whose renders are counted and numbered, so a test can tell a cached body from a fresh one. */
function counted(
  page: Omit<RuntimePage, 'module'>,
  render?: (req: SvcRequest, n: number) => string | Response | Promise<string | Response>,
) {
  const state = { renders: 0 }
  const module = {
    default: async (req: SvcRequest) => {
      const n = ++state.renders
      return render ? render(req, n) : `<p>${req.path} render ${n}${req.query('page') ? ` page ${req.query('page')}` : ''}</p>`
    },
  }
  return { page: { ...page, module } as RuntimePage, state }
}

/** Where a test sends its requests: the core in-process, or a server over HTTP. */
interface Client {
  fetch(path: string, init?: RequestInit): Promise<Response>
}

/** The whole HTTP surface of an app with these pages, called in-process. */
function inProcess(options: Partial<SvcHandlerOptions>): Client {
  const handler = createSvcHandler({ routes: [], logger: recordingLogger(), ...options })
  return { fetch: (path, init) => handler.fetch(new Request(`http://svc${path}`, init)) }
}

async function get(client: Client, path: string): Promise<{ status: number; body: string; cache: string | null; type: string | null }> {
  const res = await client.fetch(path)
  return { status: res.status, body: await res.text(), cache: res.headers.get('x-svc-cache'), type: res.headers.get('content-type') }
}

async function revalidate(client: Client, body: unknown) {
  const res = await client.fetch('/__svc/revalidate', {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

describe('server pages', () => {
  it('render on every request, with route params, as HTML', async () => {
    const { page, state } = counted({ path: '/blog/:slug', mode: 'server' }, (req, n) => `<h1>${req.param('slug')} ${n}</h1>`)
    const app = inProcess({ pages: [page] })
    expect(await get(app, '/blog/hello')).toMatchObject({
      status: 200,
      body: '<h1>hello 1</h1>',
      type: 'text/html; charset=utf-8',
      cache: null,
    })
    expect((await get(app, '/blog/hello')).body).toBe('<h1>hello 2</h1>')
    expect(state.renders).toBe(2)
  })

  it('send a returned Response as is', async () => {
    const { page } = counted(
      { path: '/feed', mode: 'server' },
      () => new Response('<rss/>', { headers: { 'content-type': 'application/rss+xml' } }),
    )
    const app = inProcess({ pages: [page] })
    expect(await get(app, '/feed')).toMatchObject({ body: '<rss/>', type: 'application/rss+xml' })
  })

  it('send Cache-Control: no-store, so no shared cache keeps one visitor’s page for the next (RFC 9111 §5.2.2.5)', async () => {
    const html = counted({ path: '/me', mode: 'server' }, (req) => `<p>hello ${req.header('cookie')}</p>`)
    const plain = counted({ path: '/plain' })
    const response = counted(
      { path: '/feed', mode: 'server' },
      () => new Response('<rss/>', { headers: { 'content-type': 'application/rss+xml' } }),
    )
    // Response.redirect() has immutable headers (Fetch §5.5).
    const redirect = counted({ path: '/old', mode: 'server' }, () => Response.redirect('http://svc/new', 301))
    const handler = createSvcHandler({
      routes: [],
      pages: [html.page, plain.page, response.page, redirect.page],
      logger: recordingLogger(),
    })
    for (const path of ['/me', '/plain', '/feed', '/old']) {
      for (const method of ['GET', 'HEAD']) {
        const res = await handler.fetch(new Request(`http://svc${path}`, { method, headers: { cookie: 'sid=1' } }))
        expect(res.headers.get('cache-control'), `${method} ${path}`).toBe('no-store')
      }
    }
    const feed = await handler.fetch(new Request('http://svc/feed'))
    expect(feed.headers.get('content-type')).toBe('application/rss+xml')
    expect(await feed.text()).toBe('<rss/>')
    const old = await handler.fetch(new Request('http://svc/old'))
    expect(old.status).toBe(301)
    expect(old.headers.get('location')).toBe('http://svc/new')
  })

  it('keep the Cache-Control a page’s own Response sets', async () => {
    const { page } = counted(
      { path: '/public', mode: 'server' },
      () => new Response('same for all', { headers: { 'cache-control': 'public, max-age=60' } }),
    )
    const handler = createSvcHandler({ routes: [], pages: [page], logger: recordingLogger() })
    const res = await handler.fetch(new Request('http://svc/public'))
    expect(res.headers.get('cache-control')).toBe('public, max-age=60')
    expect(await res.text()).toBe('same for all')
  })

  it('default to server mode when nothing says otherwise, and read mode from the module’s page export', async () => {
    const plain = counted({ path: '/plain' })
    const fromModule: RuntimePage = { path: '/mod', module: { page: { mode: 'hybrid', revalidate: 60 }, default: () => 'cached' } }
    const app = inProcess({ pages: [plain.page, fromModule] })
    await get(app, '/plain')
    await get(app, '/plain')
    expect(plain.state.renders).toBe(2)
    expect((await get(app, '/mod')).cache).toBe('MISS')
    expect((await get(app, '/mod')).cache).toBe('HIT')
  })

  it('answer methods other than GET and HEAD with 405', async () => {
    const { page } = counted({ path: '/about', mode: 'server' })
    const app = inProcess({ pages: [page] })
    const res = await app.fetch('/about', { method: 'POST' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD')
  })

  it('answer a render error with 500 INTERNAL_ERROR', async () => {
    const logger = recordingLogger()
    const { page } = counted({ path: '/broken', mode: 'server' }, () => {
      throw new Error('template missing')
    })
    const app = inProcess({ pages: [page], logger })
    const res = await app.fetch('/broken')
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual({ error: 'Internal Server Error', code: 'INTERNAL_ERROR' })
    expect(logger.text()).toContain('template missing')
  })

  it('leave static and client pages to the static directories', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pages-'))
    try {
      writeFileSync(join(dir, 'landing.html'), '<h1>built at build time</h1>')
      const landing: RuntimePage = { path: '/landing', mode: 'static', module: { default: () => 'never rendered' } }
      const app: RuntimePage = { path: '/app', mode: 'client', module: { default: () => 'never rendered' } }
      // Static directories are served by the Node server, so this one goes over HTTP.
      const server = await serve({ pages: [landing, app], staticDirs: [dir] })
      const client: Client = { fetch: (path, init) => fetch(`${server.url}${path}`, init) }
      expect((await get(client, '/landing')).body).toBe('<h1>built at build time</h1>')
      expect((await get(client, '/app')).status).toBe(404)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('hybrid pages and the ISR cache', () => {
  it('render once, then serve the cached entry while it is fresh (one entry per path plus query)', async () => {
    const { page, state } = counted({ path: '/posts', mode: 'hybrid', revalidate: 60 })
    const app = inProcess({ pages: [page] })
    expect(await get(app, '/posts')).toMatchObject({ body: '<p>/posts render 1</p>', cache: 'MISS' })
    expect(await get(app, '/posts')).toMatchObject({ body: '<p>/posts render 1</p>', cache: 'HIT' })
    expect(await get(app, '/posts?page=2')).toMatchObject({ body: '<p>/posts render 2 page 2</p>', cache: 'MISS' })
    expect(await get(app, '/posts?page=2')).toMatchObject({ cache: 'HIT' })
    expect(state.renders).toBe(2)
  })

  it('serve a stale entry at once and re-render it in the background only once', async () => {
    const gate = deferred()
    const { page, state } = counted({ path: '/news', mode: 'hybrid', revalidate: 0.2 }, async (_req, n) => {
      if (n === 2) await gate.promise
      return `news ${n}`
    })
    const app = inProcess({ pages: [page] })
    expect((await get(app, '/news')).body).toBe('news 1')
    await sleep(250)
    // Stale: served immediately even though the background render is held.
    const stale = await Promise.all([get(app, '/news'), get(app, '/news'), get(app, '/news')])
    expect(stale.map((r) => [r.body, r.cache])).toEqual([
      ['news 1', 'STALE'],
      ['news 1', 'STALE'],
      ['news 1', 'STALE'],
    ])
    expect(state.renders).toBe(2)
    gate.resolve()
    await until(async () => (await get(app, '/news')).body === 'news 2')
    expect(state.renders).toBe(2)
  })

  it('keep the stale entry when the background render fails, and log it', async () => {
    const logger = recordingLogger()
    const { page } = counted({ path: '/flaky', mode: 'hybrid', revalidate: 0.1 }, (_req, n) => {
      if (n === 2) throw new Error('upstream down')
      return `flaky ${n}`
    })
    const app = inProcess({ pages: [page], logger })
    await get(app, '/flaky')
    await sleep(150)
    expect((await get(app, '/flaky')).body).toBe('flaky 1')
    await until(() => logger.text().includes('upstream down'))
    expect((await get(app, '/flaky')).body).toBe('flaky 1')
  })

  it('do not cache answers meant for one client or that failed', async () => {
    let status = 500
    const personal = counted(
      { path: '/me', mode: 'hybrid', revalidate: 60 },
      () => new Response('hi', { headers: { 'set-cookie': 'sid=1' } }),
    )
    const failing = counted({ path: '/down', mode: 'hybrid', revalidate: 60 }, () => new Response('oops', { status }))
    const app = inProcess({ pages: [personal.page, failing.page] })
    await get(app, '/me')
    expect((await get(app, '/me')).cache).toBeNull()
    expect(personal.state.renders).toBe(2)
    expect((await get(app, '/down')).status).toBe(500)
    status = 200
    expect(await get(app, '/down')).toMatchObject({ status: 200, cache: 'MISS' })
    expect(failing.state.renders).toBe(2)
  })

  it('cache a returned Response with its headers', async () => {
    const { page } = counted({ path: '/data', mode: 'hybrid', revalidate: 60 }, (_r, n) =>
      Response.json({ n }, { headers: { 'x-kind': 'data' } }),
    )
    const app = inProcess({ pages: [page] })
    await get(app, '/data')
    const res = await app.fetch('/data')
    expect(res.headers.get('x-svc-cache')).toBe('HIT')
    expect(res.headers.get('x-kind')).toBe('data')
    expect(res.headers.get('content-type')).toBe('application/json')
    expect(await res.json()).toEqual({ n: 1 })
  })

  it('add no Cache-Control: the page’s own headers travel with the entry, plus x-svc-cache and Age', async () => {
    const { page } = counted({ path: '/posts', mode: 'hybrid', revalidate: 60 })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: recordingLogger() })
    const miss = await handler.fetch(new Request('http://svc/posts'))
    expect([...miss.headers]).toEqual([
      ['content-type', 'text/html; charset=utf-8'],
      ['x-svc-cache', 'MISS'],
    ])
    const hit = await handler.fetch(new Request('http://svc/posts'))
    expect([...hit.headers.keys()]).toEqual(['age', 'content-type', 'x-svc-cache'])
    expect(hit.headers.get('x-svc-cache')).toBe('HIT')
  })

  it('render on every request when the cache is off', async () => {
    const { page, state } = counted({ path: '/live', mode: 'hybrid', revalidate: 60 })
    const logger = recordingLogger()
    const app = inProcess({ pages: [page], cache: false, logger })
    await get(app, '/live')
    await get(app, '/live')
    expect(state.renders).toBe(2)
    expect(logger.text()).toContain('no ISR cache is configured')
    expect((await app.fetch('/__svc/revalidate', { method: 'POST' })).status).toBe(404)
  })
})

describe('a custom cache store', () => {
  it('is used instead of the memory one when it implements get, set, delete and keys', async () => {
    const entries = new Map<string, CacheEntry>()
    const calls: string[] = []
    const store: CacheStore = {
      get: async (key) => (calls.push(`get ${key}`), entries.get(key)),
      set: async (key, entry) => void (calls.push(`set ${key}`), entries.set(key, entry)),
      delete: async (key) => entries.delete(key),
      keys: async () => entries.keys(),
    }
    const { page } = counted({ path: '/shared', mode: 'hybrid', revalidate: 60 })
    const app = inProcess({ pages: [page], cache: { store }, env })
    await get(app, '/shared')
    expect((await get(app, '/shared')).cache).toBe('HIT')
    expect(calls).toEqual(['get /shared', 'set /shared', 'get /shared'])
    expect((await revalidate(app, { paths: ['/shared'] })).body.purged).toEqual(['/shared'])
    expect(entries.size).toBe(0)
  })
})

describe('POST /__svc/revalidate', () => {
  it('purges by path, every query variant included, and answers with what it removed', async () => {
    const a = counted({ path: '/blog/:slug', mode: 'hybrid', revalidate: 600 })
    const app = inProcess({ pages: [a.page], env })
    await get(app, '/blog/one')
    await get(app, '/blog/one?page=2')
    await get(app, '/blog/two')
    const res = await revalidate(app, { paths: ['/blog/one/'] })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      ok: true,
      purged: expect.arrayContaining(['/blog/one', '/blog/one?page=2']),
      paths: ['/blog/one/'],
      tags: [],
    })
    expect(res.body.purged).toHaveLength(2)
    expect((await get(app, '/blog/one')).cache).toBe('MISS')
    expect((await get(app, '/blog/two')).cache).toBe('HIT')
  })

  it('purges by tag', async () => {
    const posts = counted({ path: '/posts', mode: 'hybrid', revalidate: 600, tags: ['posts'] })
    const about = counted({ path: '/about', mode: 'hybrid', revalidate: 600, tags: ['static'] })
    const app = inProcess({ pages: [posts.page, about.page], env })
    await get(app, '/posts')
    await get(app, '/about')
    const res = await revalidate(app, { tags: ['posts', 'unknown'] })
    expect(res.body.purged).toEqual(['/posts'])
    expect((await get(app, '/posts')).body).toBe('<p>/posts render 2</p>')
    expect((await get(app, '/about')).cache).toBe('HIT')
  })

  it('is not mounted without a hybrid page to purge: a plain 404 NOT_FOUND', async () => {
    const about = counted({ path: '/about', mode: 'server' })
    const posts = counted({ path: '/posts', mode: 'hybrid', revalidate: 60 })
    const setups = [{ pages: [] }, { pages: [about.page] }, { pages: [about.page, posts.page], cache: false as const }]
    for (const setup of setups) {
      const handler = createSvcHandler({ routes: [], ...setup, env, logger: recordingLogger() })
      const res = await handler.fetch(
        new Request('http://svc/__svc/revalidate', { method: 'POST', headers: auth, body: '{"paths":["/about"]}' }),
      )
      expect(res.status, JSON.stringify(setup)).toBe(404)
      expect(await res.json()).toEqual({ error: 'No route matches POST /__svc/revalidate', code: 'NOT_FOUND' })
    }
    const withHybrid = createSvcHandler({ routes: [], pages: [about.page, posts.page], env, logger: recordingLogger() })
    const res = await withHybrid.fetch(
      new Request('http://svc/__svc/revalidate', { method: 'POST', headers: auth, body: '{"paths":["/posts"]}' }),
    )
    expect(await res.json()).toEqual({ ok: true, purged: [], paths: ['/posts'], tags: [] })
  })

  it('answers a request without paths or tags with 400 VALIDATION_FAILED', async () => {
    const app = inProcess({ pages: [counted({ path: '/posts', mode: 'hybrid' }).page], env })
    for (const body of [{}, { paths: 'x' }, { paths: ['no-slash'] }, { tags: [1] }, []]) {
      const res = await revalidate(app, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.code).toBe('VALIDATION_FAILED')
    }
  })

  it('answers other methods with 405', async () => {
    const app = inProcess({ pages: [counted({ path: '/posts', mode: 'hybrid' }).page], env })
    const res = await app.fetch('/__svc/revalidate', { headers: auth })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST')
  })

  it('does not let a render that began before a purge store its result', async () => {
    const gate = deferred()
    const { page } = counted({ path: '/slow', mode: 'hybrid', revalidate: 600 }, async (_r, n) => {
      if (n === 1) await gate.promise
      return `slow ${n}`
    })
    const handler = createSvcHandler({ routes: [], pages: [page], env, logger: recordingLogger() })
    const first = handler.fetch(new Request('http://svc/slow'))
    await sleep(20)
    const purge = await handler.fetch(
      new Request('http://svc/__svc/revalidate', { method: 'POST', headers: auth, body: '{"paths":["/slow"]}' }),
    )
    expect(purge.status).toBe(200)
    gate.resolve()
    expect(await (await first).text()).toBe('slow 1')
    const next = await handler.fetch(new Request('http://svc/slow'))
    expect(next.headers.get('x-svc-cache')).toBe('MISS')
    expect(await next.text()).toBe('slow 2')
  })
})

describe('ISR cache misses', () => {
  function hybridPage(render: () => Promise<string | Response>): RuntimePage {
    return { path: '/', mode: 'hybrid', revalidate: 60, tags: [], module: { default: render, page: { mode: 'hybrid', revalidate: 60 } } }
  }

  it('concurrent requests for an uncached page share one render', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await sleep(30)
      return `<p>render ${renders}</p>`
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: recordingLogger() })
    const responses = await Promise.all(Array.from({ length: 5 }, () => handler.fetch(new Request('http://localhost/'))))
    const bodies = await Promise.all(responses.map((res) => res.text()))
    expect(renders).toBe(1)
    expect(new Set(bodies)).toEqual(new Set(['<p>render 1</p>']))
    expect(responses.map((res) => res.headers.get('x-svc-cache'))).toEqual(['MISS', 'MISS', 'MISS', 'MISS', 'MISS'])
    expect((await handler.fetch(new Request('http://localhost/'))).headers.get('x-svc-cache')).toBe('HIT')
  })

  it('when the shared render fails, the waiting requests render for themselves', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await sleep(20)
      if (renders === 1) throw new Error('first render fails')
      return '<p>ok</p>'
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: recordingLogger() })
    const statuses = await Promise.all(
      Array.from({ length: 3 }, () => handler.fetch(new Request('http://localhost/')).then((res) => res.status)),
    )
    expect(statuses.filter((status) => status === 500)).toHaveLength(1)
    expect(statuses.filter((status) => status === 200)).toHaveLength(2)
  })

  it('an uncacheable render is not shared', async () => {
    let renders = 0
    const page = hybridPage(async () => {
      renders++
      await sleep(20)
      return new Response('private', { headers: { 'cache-control': 'no-store' } })
    })
    const handler = createSvcHandler({ routes: [], pages: [page], logger: recordingLogger() })
    const bodies = await Promise.all(
      Array.from({ length: 3 }, () => handler.fetch(new Request('http://localhost/')).then((res) => res.text())),
    )
    expect(bodies).toEqual(['private', 'private', 'private'])
    expect(renders).toBeGreaterThan(1)
  })
})

describe('POST /__svc/revalidate by path, compared as URLs however they are escaped', () => {
  function blog(): RuntimePage {
    let renders = 0
    return {
      path: '/blog/:slug',
      mode: 'hybrid',
      revalidate: 600,
      module: { default: (req: SvcRequest) => `<p>${req.param('slug')} ${++renders}</p>` },
    }
  }

  async function cacheState(client: Client, path: string): Promise<string | null> {
    const res = await client.fetch(path)
    await res.arrayBuffer()
    return res.headers.get('x-svc-cache')
  }

  async function revalidate(client: Client, paths: string[]): Promise<{ status: number; purged: string[] }> {
    const res = await client.fetch('/__svc/revalidate', {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify({ paths }),
    })
    const body = (await res.json()) as { purged: string[] }
    return { status: res.status, purged: body.purged }
  }

  // Cache keys come from the request URL, where `é` and a space are
  // percent-encoded; a revalidation names the page as a person writes it.
  it('purges a page whose path has non-ASCII letters or spaces, given as written', async () => {
    const app = inProcess({ pages: [blog()], env })
    expect(await cacheState(app, '/blog/café')).toBe('MISS')
    expect(await cacheState(app, '/blog/a%20b?x=1')).toBe('MISS')
    expect(await cacheState(app, '/blog/café')).toBe('HIT')
    const res = await revalidate(app, ['/blog/café', '/blog/a b'])
    expect(res.status).toBe(200)
    expect(res.purged.sort()).toEqual(['/blog/a%20b?x=1', '/blog/caf%C3%A9'])
    expect(await cacheState(app, '/blog/café')).toBe('MISS')
    expect(await cacheState(app, '/blog/a%20b?x=1')).toBe('MISS')
  })

  it('purges the same page reached through an escaped path', async () => {
    const app = inProcess({ pages: [blog()], env })
    // `%61` is `a`: the same page, cached under a second key.
    await cacheState(app, '/blog/a')
    await cacheState(app, '/blog/%61')
    const res = await revalidate(app, ['/blog/a'])
    expect(res.purged.sort()).toEqual(['/blog/%61', '/blog/a'])
    expect(await cacheState(app, '/blog/%61')).toBe('MISS')
  })

  it('keeps an escaped slash apart from a path separator', async () => {
    const app = inProcess({ pages: [blog()], env })
    // `a%2Fb` is one segment (slug "a/b"); `/blog/a/b` would be another page.
    await cacheState(app, '/blog/a%2Fb')
    expect((await revalidate(app, ['/blog/a/b'])).purged).toEqual([])
    expect((await revalidate(app, ['/blog/a%2fb'])).purged).toEqual(['/blog/a%2Fb'])
  })

  it('matches a path with a query string against the same query, escaped or not', async () => {
    const app = inProcess({ pages: [blog()], env })
    await cacheState(app, '/blog/x?q=café')
    await cacheState(app, '/blog/x?q=other')
    const res = await revalidate(app, ['/blog/x?q=café'])
    expect(res.purged).toEqual(['/blog/x?q=caf%C3%A9'])
    expect(await cacheState(app, '/blog/x?q=other')).toBe('HIT')
  })
})
