/**
 * svc mounted inside other hosts: under a path prefix (the host rewrites
 * `request.url`), and next to a host that replaces the global `Response`.
 * Over real HTTP where the host's server is what rewrites the request (h3 on
 * srvx), in-process otherwise.
 */
import type { AddressInfo } from 'node:net'
import { serve as serveHono } from '@hono/node-server'
import { H3, serve as serveH3 } from 'h3'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { createApiApp, createSvcHandler, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger } from './_helpers.ts'

const SECRET = 'mounting-secret-0123456789abcdef0123'
const routes: RuntimeApiRoute[] = [
  { path: '/api/greet', module: { GET: () => ({ hello: 'world' }) } },
  { path: '/api/users/:id', module: { GET: (req) => ({ id: req.param('id'), q: req.query('q') ?? null }) } },
  { path: '/api/files/:rest*', module: { GET: (req) => ({ rest: req.param('rest') }) } },
  { path: '/api/jobs/ping', kind: 'task', module: { POST: () => 'pong' } },
]

const apiApp = () => createApiApp({ routes, logger: recordingLogger(), env: { NODE_ENV: 'production' } })

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** An h3 app served by h3's own `serve()` (srvx) on an ephemeral port. */
async function h3Server(mount: (app: H3) => void): Promise<string> {
  const app = new H3()
  mount(app)
  const server = serveH3(app, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await server.ready()
  closers.push(() => server.close(true))
  return server.url!.replace(/\/$/, '')
}

async function json(res: Response | Promise<Response>): Promise<{ status: number; body: any }> {
  const r = await res
  return { status: r.status, body: await r.json() }
}

/** What every prefixed mount must answer, whoever strips the prefix. */
async function expectRoutedUnderPrefix(get: (path: string) => Promise<Response>): Promise<void> {
  expect(await json(get('/svc/api/greet'))).toEqual({ status: 200, body: { hello: 'world' } })
  expect(await json(get('/svc/api/users/42?q=hi'))).toEqual({ status: 200, body: { id: '42', q: 'hi' } })
  // An escaped slash stays inside its segment; the param is decoded.
  expect(await json(get('/svc/api/users/a%2Fb'))).toEqual({ status: 200, body: { id: 'a/b', q: null } })
  expect(await json(get('/svc/api/users/caf%C3%A9%20au%20lait'))).toEqual({ status: 200, body: { id: 'café au lait', q: null } })
  expect(await json(get('/svc/api/files/docs/a%2Fb.txt'))).toEqual({ status: 200, body: { rest: 'docs/a/b.txt' } })
}

describe('createApiApp mounted under a prefix', () => {
  it('routes by the URL the host passes down when h3 mounts it and srvx serves it over HTTP', async () => {
    const base = await h3Server((app) => app.mount('/svc', apiApp()))
    await expectRoutedUnderPrefix((path) => fetch(base + path))
    const missing = await json(fetch(`${base}/svc/api/nope`))
    expect(missing).toEqual({ status: 404, body: { error: 'No route matches GET /api/nope', code: 'NOT_FOUND' } })
  })

  it('routes by the URL the host passes down when Hono mounts its fetch', async () => {
    const host = new Hono().mount('/svc', apiApp().fetch)
    await expectRoutedUnderPrefix(async (path) => host.request(path))
  })

  it('routes under the prefix when Hono takes its routes with app.route()', async () => {
    const host = new Hono().route('/svc', apiApp())
    await expectRoutedUnderPrefix(async (path) => host.request(path))
  })
})

describe('createSvcHandler mounted under a prefix', () => {
  it('serves routes, /__health and /__tasks below the prefix when h3 mounts it over HTTP', async () => {
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, logger: recordingLogger() })
    closers.push(() => handler.runtime.close!())
    const base = await h3Server((app) => app.mount('/svc', handler))
    await expectRoutedUnderPrefix((path) => fetch(base + path))
    expect(await json(fetch(`${base}/svc/__health`))).toEqual({ status: 200, body: { ok: true, framework: 'svc' } })
    const tasks = await json(fetch(`${base}/svc/__tasks`, { headers: { authorization: `Bearer ${SECRET}` } }))
    expect(tasks.status).toBe(200)
    expect(tasks.body.tasks.map((t: { name: string }) => t.name)).toEqual(['jobs.ping'])
  })
})

describe('a host that replaces the global Response after the app is created', () => {
  it('gets answers built with the Response of the time of the request', async () => {
    const globals = {
      Request: Object.getOwnPropertyDescriptor(globalThis, 'Request')!,
      Response: Object.getOwnPropertyDescriptor(globalThis, 'Response')!,
    }
    closers.push(async () => {
      Object.defineProperty(globalThis, 'Request', globals.Request)
      Object.defineProperty(globalThis, 'Response', globals.Response)
    })
    const svc = apiApp()
    const handler = createSvcHandler({ routes, env: { NODE_ENV: 'production' }, logger: recordingLogger() })
    closers.push(() => handler.runtime.close!())
    // @hono/node-server installs its own Request and Response globals when it starts serving.
    const other = serveHono({ fetch: () => new Response('other'), port: 0, hostname: '127.0.0.1' })
    closers.push(() => new Promise((resolve) => other.close(resolve)))
    await new Promise((resolve) => (other.listening ? resolve(undefined) : other.once('listening', resolve)))
    expect(globalThis.Response).not.toBe(globals.Response.value)

    const base = await h3Server((app) => app.mount('/svc', svc).mount('/whole', handler))
    expect(await json(fetch(`${base}/svc/api/users/7`))).toEqual({ status: 200, body: { id: '7', q: null } })
    expect(await json(fetch(`${base}/whole/api/users/8`))).toEqual({ status: 200, body: { id: '8', q: null } })
    expect(await json(fetch(`${base}/svc/__health`))).toEqual({ status: 200, body: { ok: true, framework: 'svc' } })
    const missing = await fetch(`${base}/svc/api/nope`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ code: 'NOT_FOUND' })
    expect((await fetch(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`)).status).toBe(200)
  })
})
