/**
 * The handler the Cloudflare worker mounts: `createCoreHandler` without the
 * parts it cannot reach. Its event streams answer as a streaming host does
 * where the runs change in another place (501, readable by the pages of a
 * listed origin), and without a secret no request passes, whatever peer
 * address it comes with.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { createTaskRuntime, type RuntimeApiRoute, type TaskRuntime } from '../../src/index.ts'
import { createCoreHandler } from '../../src/runtime/handler.ts'
import { TASK_SURFACE } from '../../src/runtime/task-surface.ts'
import { createCoreRuntime } from '../../src/runtime/tasks/runtime.ts'
import { recordingLogger } from './_helpers.ts'

const SECRET = 'core-secret-0123456789abcdef0123456789'
const APP = 'https://app.example.com'
const routes: RuntimeApiRoute[] = [{ path: '/api/jobs/report', module: { kind: 'task', POST: async () => 'done' } }]

/** A runtime whose runs change elsewhere, as the worker's view of the tasks object has no `onRunChange`. */
function remoteRuntime(): TaskRuntime {
  const runtime = createTaskRuntime({ routes, env: {}, logger: recordingLogger() })
  onTestFinished(() => runtime.close())
  delete runtime.onRunChange
  return runtime
}

function workerHandler(runtime: TaskRuntime = remoteRuntime(), env: Record<string, string> = { SVC_TASK_SECRET: SECRET }) {
  return createCoreHandler(
    { routes, runtime, env: { SVC_REALTIME_ORIGINS: APP, ...env }, logger: recordingLogger() },
    { tasks: TASK_SURFACE },
  )
}

const get = (handler: ReturnType<typeof workerHandler>, path: string, headers: Record<string, string> = {}, method = 'GET') =>
  handler.fetch(new Request(`http://worker${path}`, { method, headers }))

describe('the worker handler without the event streams', () => {
  it('answers GET /__tasks/events with 501 NOT_IMPLEMENTED once the admin auth lets the request in', async () => {
    const handler = workerHandler()
    expect((await get(handler, '/__tasks/events')).status).toBe(401)
    const res = await get(handler, '/__tasks/events', { authorization: `Bearer ${SECRET}` })
    expect(res.status).toBe(501)
    expect(await res.json()).toMatchObject({ code: 'NOT_IMPLEMENTED', error: expect.stringMatching(/poll GET \/__tasks\/runs instead$/) })
  })

  it("answers a run's stream with 501 to any reader, with the CORS headers a page of a listed origin needs", async () => {
    const handler = workerHandler()
    for (const path of ['/__tasks/runs/some-id/stream', '/__tasks/some-id/stream']) {
      const readers: Record<string, string>[] = [
        { origin: APP },
        { origin: APP, authorization: `Bearer ${SECRET}` },
        { origin: APP, authorization: 'Bearer rt1.x.y' },
      ]
      for (const headers of readers) {
        const res = await get(handler, path, headers)
        expect(res.status).toBe(501)
        expect(res.headers.get('access-control-allow-origin')).toBe(APP)
        expect(await res.json()).toMatchObject({
          code: 'NOT_IMPLEMENTED',
          error: expect.stringMatching(/poll GET \/__tasks\/runs\/some-id/),
        })
      }
    }
    const foreign = await get(handler, '/__tasks/runs/some-id/stream', { origin: 'https://evil.example' })
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
  })

  it("keeps what a run's stream answers before any credential: the preflight, 405 and 204 after the end", async () => {
    const handler = workerHandler()
    const path = '/__tasks/runs/some-id/stream'
    const preflight = await get(handler, path, { origin: APP, 'access-control-request-method': 'GET' }, 'OPTIONS')
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP)
    const refused = await get(handler, path, { origin: 'https://evil.example', 'access-control-request-method': 'GET' }, 'OPTIONS')
    expect(refused.status).toBe(403)
    expect((await refused.json()).code).toBe('ORIGIN_NOT_ALLOWED')
    const post = await get(handler, path, {}, 'POST')
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    expect((await get(handler, path, { 'last-event-id': 'done' })).status).toBe(204)
  })

  it('says the host serves no streams where its runtime could report run changes', async () => {
    const runtime = createTaskRuntime({ routes, env: {}, logger: recordingLogger() })
    onTestFinished(() => runtime.close())
    const res = await get(workerHandler(runtime), '/__tasks/events', { authorization: `Bearer ${SECRET}` })
    expect(res.status).toBe(501)
    expect((await res.json()).error).toBe('This host serves no event streams; poll GET /__tasks/runs instead')
  })
})

describe('the worker handler without the development exemption', () => {
  it('lets no request in without a secret, even one from a loopback peer in development', async () => {
    const handler = workerHandler(remoteRuntime(), { NODE_ENV: 'development' })
    const res = await handler.fetch(new Request('http://localhost/__tasks'), { remoteAddress: '127.0.0.1' })
    expect(res.status).toBe(401)
    expect((await res.json()).error).toBe(
      'No task secret is configured: set SVC_TASK_SECRET on the server and send Authorization: Bearer <secret>',
    )
  })
})

describe('the runtime a handler makes for itself', () => {
  it('refuses a store several processes share, whose claims it leaves out, and names what to use', () => {
    const store = { shared: { leaseMs: 30_000, pollMs: 1000 } } as never
    expect(() => createCoreRuntime({ routes, store, env: {} })).toThrow(
      new TypeError('This task runtime cannot run on a store several processes share; create it with createTaskRuntime() from svc'),
    )
  })
})

describe('a handler built without the task part', () => {
  it('refuses a route that is a task, or a runtime, naming the fix', () => {
    expect(() => createCoreHandler({ routes, env: {}, logger: recordingLogger() })).toThrow(
      'route /api/jobs/report is a task, but this host was built for an app without tasks; build the app again (svc build), or serve it with createSvcHandler()',
    )
    expect(() => createCoreHandler({ routes: [], runtime: remoteRuntime(), env: {}, logger: recordingLogger() })).toThrow(
      'runtime is given, but this host was built for an app without tasks',
    )
  })

  it('answers the task paths with 404 NO_TASKS, and serves its routes', async () => {
    const hello: RuntimeApiRoute = { path: '/api/hello', module: { GET: () => ({ hello: 'world' }) } }
    const handler = createCoreHandler({ routes: [hello], env: {}, logger: recordingLogger() })
    expect(handler.runtime).toBeUndefined()
    expect(await (await handler.fetch(new Request('http://worker/api/hello'))).json()).toEqual({ hello: 'world' })
    for (const path of ['/__tasks', '/__tasks/runs', '/__events/signup', '/__svc/dashboard']) {
      const res = await handler.fetch(new Request(`http://worker${path}`))
      expect(res.status, path).toBe(404)
      expect((await res.json()).code, path).toBe('NO_TASKS')
    }
  })
})
