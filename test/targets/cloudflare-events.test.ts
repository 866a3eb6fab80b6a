/**
 * Events through a Cloudflare worker whose tasks live in the `SvcTasks`
 * Durable Object, in real workerd: `POST /__events` and `GET /__events` on
 * the worker reach the object's runtime and store (`object-runtime.ts`,
 * `tasks-object.ts`), so the list shows the runs an event started and the
 * wait it met there.
 */
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundle } from '../../src/build/bundle.ts'

const SECRET = 'events-secret-0123456789abcdef012345'
const runtime = JSON.stringify(fileURLToPath(new URL('../../targets/cloudflare/runtime.ts', import.meta.url)))

const WORKER = `
import { createTasksObject, createWorker } from ${runtime}
const routes = [
  { path: '/api/receipt', module: { route: { kind: 'task', on: 'order.paid' }, POST: (ctx) => ctx.input } },
  {
    path: '/api/fulfil',
    module: {
      route: { kind: 'task' },
      POST: (ctx) => ctx.step.waitForEvent('paid', 'order.paid', { match: { orderId: ctx.input.orderId } }),
    },
  },
]
const app = { routes }
export default createWorker(app)
export const SvcTasks = createTasksObject(app)
`

let mf: Miniflare

beforeAll(async () => {
  const { code } = await bundle({ input: '/virtual/events-worker.mjs', entrySource: WORKER, platform: 'worker', minify: false })
  mf = new Miniflare({
    modules: [{ type: 'ESModule', path: '/worker.mjs', contents: code }],
    modulesRoot: '/',
    compatibilityDate: '2025-09-01',
    bindings: { SVC_TASK_SECRET: SECRET },
    durableObjects: { SVC_TASKS: { className: 'SvcTasks', useSQLite: true } },
  })
  await mf.ready
})
afterAll(() => mf?.dispose())

async function call(path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await mf.dispatchFetch(`http://worker${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() }
}

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('not seen within 10 s')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe('events on cloudflare, through the tasks Durable Object', () => {
  it('GET /__events lists what POST /__events did in the object: the runs it started and the wait it met', async () => {
    const waiting = await call('/__tasks/fulfil', { orderId: 'o-1' })
    expect(waiting.status).toBe(202)
    await until(async () => (await call(`/__tasks/runs/${waiting.body.id}`)).body.status === 'suspended')
    const sent = await call('/__events', [{ name: 'order.paid', data: { orderId: 'o-1' }, id: 'evt-cf' }])
    expect(sent.status).toBe(202)
    const [started] = sent.body.events[0].runs
    await until(async () => (await call(`/__tasks/runs/${started.id}`)).body.status === 'completed')

    const listed = await call('/__events?name=order.paid&limit=5')
    expect(listed.status).toBe(200)
    expect(listed.body).toEqual({
      events: [
        {
          id: 'evt-cf',
          name: 'order.paid',
          size: 17,
          time: expect.any(String),
          runs: [{ id: started.id, taskName: 'receipt', status: 'completed' }],
          resumed: [waiting.body.id],
        },
      ],
    })
    // The data comes with one event, not with the listing.
    expect(await call('/__events/evt-cf')).toMatchObject({ status: 200, body: { id: 'evt-cf', data: { orderId: 'o-1' }, size: 17 } })
    const bad = await call('/__events?limit=500')
    expect(bad).toEqual({
      status: 400,
      body: { code: 'INVALID_QUERY', error: expect.stringMatching(/limit must be a whole number from 1 to 200/) },
    })
  })
})
