import WebSocket from 'ws'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { loadApiRoutes, loadPages } from '../../src/node.ts'
import { createSvcHandler, type RuntimeApiRoute, type RuntimePage } from '../../src/index.ts'
import { recordingLogger, serve } from './_helpers.ts'

const root = fileURLToPath(new URL('../fixtures/http-app', import.meta.url))
const bad = fileURLToPath(new URL('../fixtures/http-bad-config', import.meta.url))

describe('loadApiRoutes and loadPages', () => {
  it('scan the app and import every TypeScript file with its manifest entry', async () => {
    const routes = await loadApiRoutes({ root })
    const byPath = Object.fromEntries(routes.map((r) => [r.path, r]))
    expect(Object.keys(byPath).sort()).toEqual(['/api/chat', '/api/files/:path*', '/api/hello', '/api/report', '/api/users/:id'])
    expect(byPath['/api/report']).toMatchObject({ kind: 'task', name: 'report', retries: 2, file: 'src/api/report.ts' })
    expect(byPath['/api/chat']).toMatchObject({ kind: 'hot', origins: ['https://chat.example'] })
    expect(typeof byPath['/api/hello'].module.GET).toBe('function')

    const pages = await loadPages({ root })
    expect(pages.map((p) => [p.path, p.mode])).toEqual([
      ['/', 'server'],
      ['/blog/:slug', 'hybrid'],
    ])
    expect(typeof pages[0].module.default).toBe('function')
  })

  it('feed startSvcServer directly', async () => {
    const server = await serve({ apiRoutes: await loadApiRoutes({ root }), pages: await loadPages({ root }) })
    expect(await (await fetch(`${server.url}/api/hello`)).json()).toEqual({ hello: 'world' })
    expect(await (await fetch(`${server.url}/api/users/12`)).json()).toEqual({ id: 12 })
    expect((await fetch(`${server.url}/api/users/abc`)).status).toBe(400)
    expect(await (await fetch(`${server.url}/api/files/a/b.txt`)).json()).toEqual({ path: 'a/b.txt' })
    expect(await (await fetch(`${server.url}/`)).text()).toBe('<h1>home</h1>')
    const blog = await fetch(`${server.url}/blog/first`)
    expect(await blog.text()).toBe('<article>first</article>')
    expect(blog.headers.get('x-svc-cache')).toBe('MISS')
    expect((await fetch(`${server.url}/api/report`, { method: 'POST' })).status).toBe(404)
    const run = await (
      await fetch(`${server.url}/__tasks/report`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"m":1}' })
    ).json()
    expect((await server.runtime.waitForRun(run.id)).result).toEqual({ report: { m: 1 } })

    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/chat`, { headers: { origin: 'https://chat.example' } })
    const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())))
    await new Promise((resolve) => ws.once('open', resolve))
    ws.send('hi')
    expect(await reply).toMatch(/^\d+:hi$/)
    ws.close()
    const refused = new WebSocket(`${server.url.replace('http', 'ws')}/api/chat`, { headers: { origin: 'https://evil.example' } })
    const status = await new Promise((resolve) => refused.once('unexpected-response', (_q, res) => resolve(res.statusCode)))
    refused.on('error', () => {})
    expect(status).toBe(403)
  })

  it('refuse to load an app with config errors, listing every one as file:line:col', async () => {
    const error = await loadApiRoutes({ root: bad }).then(
      () => undefined,
      (e: Error) => e,
    )
    expect(error?.name).toBe('ManifestError')
    const lines = error!.message.split('\n')
    expect(lines.length).toBeGreaterThanOrEqual(2)
    expect(lines.some((l) => /^src\/api\/one\.ts:2:\d+: /.test(l))).toBe(true)
    expect(lines.some((l) => /^src\/api\/two\.ts:1:\d+: /.test(l))).toBe(true)
  })

  it('reject a missing root with a TypeError naming the option', async () => {
    await expect(loadApiRoutes({} as never)).rejects.toThrow(
      new TypeError('loadApiRoutes(): root must be the app directory (got undefined)'),
    )
    await expect(loadPages(undefined as never)).rejects.toThrow(/loadPages\(\): root must be the app directory/)
  })
})

describe('an app loaded with loadApiRoutes and loadPages, from a fresh copy', () => {
  const fixture = fileURLToPath(new URL('../fixtures/shared-helpers-app', import.meta.url))

  /** The loaded app behind the whole HTTP surface, in-process, asked by a loopback peer. */
  const app = (routes: RuntimeApiRoute[], pages: RuntimePage[]) => {
    const handler = createSvcHandler({ routes, pages, env: { NODE_ENV: 'test' }, logger: recordingLogger() })
    onTestFinished(() => handler.runtime.close())
    return {
      runtime: handler.runtime,
      fetch: (path: string, init?: RequestInit) =>
        handler.fetch(new Request(`http://localhost${path}`, init), { remoteAddress: '127.0.0.1' }),
    }
  }

  let root: string
  beforeAll(async () => {
    // A fresh copy: module instances are per file, and this test wants its own.
    root = join(await mkdtemp(join(tmpdir(), 'svc-shared-')), 'app')
    await cp(fixture, root, { recursive: true })
  })
  afterAll(() => rm(join(root, '..'), { recursive: true, force: true }))

  // As in a built bundle and in Node itself, a module imported by several
  // files is one instance: its state is shared by every route, page and task.
  it('shares one instance of a helper module between routes, pages and tasks', async () => {
    const svc = app(await loadApiRoutes({ root }), await loadPages({ root }))
    const add = (name: string) => svc.fetch('/api/items', { method: 'POST', body: JSON.stringify({ name }) }).then((res) => res.json())
    expect(await add('apple')).toEqual({ count: 1 })
    expect(await add('pear')).toEqual({ count: 2 })
    expect(await (await svc.fetch('/api/count')).json()).toEqual({ count: 2 })
    expect(await (await svc.fetch('/')).text()).toBe('<ul><li>apple</li><li>pear</li></ul>')
    const run = (await (
      await svc.fetch('/__tasks/jobs.remember', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"plum"}',
      })
    ).json()) as {
      id: string
    }
    expect((await svc.runtime.waitForRun(run.id)).result).toEqual({ count: 3 })
    expect(await (await svc.fetch('/api/count')).json()).toEqual({ count: 3 })
  })

  // `svc` in app code is the runtime's own copy, so the errors it exports
  // keep their status and code (README: "Errors with a stable code").
  it('answers errors thrown from svc’s own classes with their status and code', async () => {
    const svc = app(await loadApiRoutes({ root }), [])
    const conflict = await svc.fetch('/api/conflict')
    expect(conflict.status).toBe(409)
    expect(await conflict.json()).toEqual({ error: 'That name is taken', code: 'NAME_TAKEN' })
    const payment = await svc.fetch('/api/conflict', { method: 'PUT' })
    expect(payment.status).toBe(402)
    expect((await payment.json()).code).toBe('PAYMENT_REQUIRED')
    const invalid = await svc.fetch('/api/conflict', { method: 'POST' })
    expect(invalid.status).toBe(400)
    expect(await invalid.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ target: 'body', path: ['name'], message: 'Expected a name' }],
    })
  })
})
