/**
 * Sending events over HTTP (`POST /__events/<name>`, `POST /__events`) to a
 * real server on port 0, under the task admin surface's auth, and
 * `sendEvent()` from a process with no task runtime, which goes over HTTP.
 */
import { describe, expect, it } from 'vitest'
import { HttpError, MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { sendEventsOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { serve } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/receipt',
    module: { route: { kind: 'task', on: ['order.paid', 'stripe/invoice.paid'] }, POST: (ctx: TaskContext) => ctx.input },
  },
]

const start = () => serve({ apiRoutes: routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })

const post = (url: string, body: unknown, headers: Record<string, string> = AUTH) =>
  fetch(url, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) })

describe('POST /__events', () => {
  it('POST /__events/<name> sends the body as data: 202 with the event id and the runs it started; Idempotency-Key is the id', async () => {
    const server = await start()
    const res = await post(`${server.url}/__events/order.paid`, { orderId: 'o-1' }, { ...AUTH, 'idempotency-key': 'evt-9' })
    expect(res.status).toBe(202)
    const body = await res.json()
    expect(body).toMatchObject({ id: 'evt-9', name: 'order.paid', runs: [{ taskName: 'receipt', status: 'running' }] })
    const run = await server.runtime.waitForRun(body.runs[0].id)
    expect(run).toMatchObject({ result: { orderId: 'o-1' }, event: { id: 'evt-9', name: 'order.paid' } })
    // The same id again: the same run.
    const again = await (
      await post(`${server.url}/__events/order.paid`, { orderId: 'o-1' }, { ...AUTH, 'idempotency-key': 'evt-9' })
    ).json()
    expect(again.runs[0].id).toBe(body.runs[0].id)
  })

  it("a name with '/' goes in the path as written or percent-encoded; one the name rule refuses is 400 INVALID_EVENT", async () => {
    const server = await start()
    const encoded = await post(`${server.url}/__events/stripe%2Finvoice.paid`, { total: 5 })
    expect(encoded.status).toBe(202)
    expect((await encoded.json()).name).toBe('stripe/invoice.paid')
    const written = await post(`${server.url}/__events/billing/invoice-paid`, {})
    expect(written.status).toBe(202)
    expect((await written.json()).name).toBe('billing/invoice-paid')
    const bad = await post(`${server.url}/__events/billing/invoice%20paid`, {})
    expect(bad.status).toBe(400)
    expect((await bad.json()).code).toBe('INVALID_EVENT')
  })

  it('POST /__events takes a list; one bad event is 400 INVALID_EVENT and none is sent', async () => {
    const server = await start()
    const res = await post(`${server.url}/__events`, [
      { name: 'order.paid', data: { n: 1 }, id: 'a' },
      { name: 'order.paid', data: { n: 2 }, id: 'b' },
    ])
    expect(res.status).toBe(202)
    expect((await res.json()).events.map((event: { id: string }) => event.id)).toEqual(['a', 'b'])
    const bad = await post(`${server.url}/__events`, [{ name: 'order.paid', id: 'c' }, { name: 'no spaces allowed' }])
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'INVALID_EVENT', error: expect.stringMatching(/event 1: an event name is/) })
    const notList = await post(`${server.url}/__events`, { name: 'order.paid' })
    expect(await notList.json()).toMatchObject({ code: 'INVALID_EVENT', error: expect.stringMatching(/takes a JSON array/) })
    expect((await server.runtime.listRuns()).map((run) => run.event?.id).sort()).toEqual(['a', 'b'])
  })

  it('answers 401 without the secret, 405 to other methods and 415 to a body that is not JSON', async () => {
    const server = await start()
    expect((await post(`${server.url}/__events/order.paid`, {}, { 'content-type': 'application/json' })).status).toBe(401)
    // A GET there reads the event of that id (GET /__events/<id>): none was sent.
    const got = await fetch(`${server.url}/__events/order.paid`, { headers: AUTH })
    expect([got.status, ((await got.json()) as { code: string }).code]).toEqual([404, 'EVENT_NOT_FOUND'])
    const put = await fetch(`${server.url}/__events/order.paid`, { method: 'PUT', headers: AUTH, body: '{}' })
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST'])
    const text = await fetch(`${server.url}/__events/order.paid`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'text/plain' },
      body: 'hi',
    })
    expect(text.status).toBe(415)
    expect(await server.runtime.listRuns()).toEqual([])
  })
})

describe('sendEvent() without a task runtime in the process', () => {
  it('sends over HTTP to SVC_TASK_URL with SVC_TASK_SECRET, and a refusal is an HttpError with its code', async () => {
    const server = await start()
    const env = { SVC_TASK_URL: server.url, SVC_TASK_SECRET: SECRET }
    const [sent] = await sendEventsOverHttp(
      [{ name: 'order.paid', data: { orderId: 'o-2' }, id: 'evt-http' }],
      'sendEvent("order.paid")',
      env,
    )
    expect(sent).toMatchObject({ id: 'evt-http', runs: [{ taskName: 'receipt' }] })
    const refused = await sendEventsOverHttp([{ name: 'bad name' }], 'sendEvents()', env).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(HttpError)
    expect(refused).toMatchObject({ status: 400, code: 'INVALID_EVENT' })
  })
})
