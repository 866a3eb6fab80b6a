/**
 * Listing events over HTTP (`GET /__events`) on a real server on port 0,
 * under the task admin surface's auth: newest first, each event with the
 * runs it started and the waits it met and the size of its data but not
 * the data, filtered by name and paged by cursor; one event with its data
 * (`GET /__events/<id>`); a bad query is 400 `INVALID_QUERY`, and a store
 * that keeps no list of events is 501 `NOT_IMPLEMENTED`.
 */
import { describe, expect, it } from 'vitest'
import { MemoryRunStore, type RunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

const routes: RuntimeApiRoute[] = [
  { path: '/api/receipt', module: { route: { kind: 'task', on: 'order.paid' }, POST: (ctx: TaskContext) => ctx.input } },
  {
    path: '/api/fulfil',
    module: {
      route: { kind: 'task' },
      POST: async (ctx: TaskContext<{ orderId: string; lookbackSeconds?: number }>) =>
        ctx.step.waitForEvent('paid', 'order.paid', {
          match: { orderId: ctx.input.orderId },
          lookbackSeconds: ctx.input.lookbackSeconds ?? 0,
        }),
    },
  },
]

const start = (store: RunStore = new MemoryRunStore()) =>
  serve({ apiRoutes: routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store })

const send = async (url: string, events: unknown[]) => {
  const res = await fetch(`${url}/__events`, { method: 'POST', headers: AUTH, body: JSON.stringify(events) })
  expect(res.status).toBe(202)
  return (await res.json()).events
}
const list = async (url: string, query = '') => {
  const res = await fetch(`${url}/__events${query}`, { headers: AUTH })
  return { status: res.status, body: await res.json() }
}

describe('GET /__events', () => {
  it('lists events newest first, each with the size of its data, the runs it started and the waits it met, without the data', async () => {
    const server = await start()
    const waiting = await server.runtime.trigger('fulfil', { orderId: 'o-1' })
    await until(async () => (await server.runtime.getRun(waiting.id))?.status === 'suspended')
    const [paid] = await send(server.url, [{ name: 'order.paid', data: { orderId: 'o-1' }, id: 'evt-1' }])
    await send(server.url, [{ name: 'order.shipped', id: 'evt-2' }])
    await server.runtime.waitForRun(paid.runs[0].id)
    await server.runtime.waitForRun(waiting.id)
    const { status, body } = await list(server.url)
    expect(status).toBe(200)
    expect(body).toEqual({
      events: [
        { id: 'evt-2', name: 'order.shipped', time: expect.any(String), size: 0, runs: [], resumed: [] },
        {
          id: 'evt-1',
          name: 'order.paid',
          time: expect.any(String),
          size: JSON.stringify({ orderId: 'o-1' }).length,
          runs: [{ id: paid.runs[0].id, taskName: 'receipt', status: 'completed' }],
          resumed: [waiting.id],
        },
      ],
    })
  })

  it('lists a wait met by an event recorded before it began (lookbackSeconds) under that event', async () => {
    const server = await start()
    await send(server.url, [{ name: 'order.paid', data: { orderId: 'early' }, id: 'evt-early' }])
    const run = await server.runtime.trigger('fulfil', { orderId: 'early', lookbackSeconds: 60 })
    expect((await server.runtime.waitForRun(run.id)).result).toMatchObject({ event: { id: 'evt-early' } })
    const [event] = (await list(server.url)).body.events
    expect(event).toMatchObject({ id: 'evt-early', resumed: [run.id], runs: [{ taskName: 'receipt' }] })
  })

  it('filters by name and pages with the cursor, each event once; 50 a page unless limit says', async () => {
    const server = await start()
    await send(
      server.url,
      Array.from({ length: 55 }, (_, i) => ({ name: i % 11 === 0 ? 'pong' : 'ping', id: `e${i}` })),
    )
    const first = await list(server.url)
    expect(first.body.events).toHaveLength(50)
    expect(first.body.events[0].id).toBe('e54')
    const rest = await list(server.url, `?cursor=${first.body.cursor}`)
    expect(rest.body.events.map((event: { id: string }) => event.id)).toEqual(['e4', 'e3', 'e2', 'e1', 'e0'])
    expect(rest.body.cursor).toBeUndefined()

    const pongs: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await list(server.url, `?name=pong&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(page.status).toBe(200)
      pongs.push(...page.body.events.map((event: { id: string }) => event.id))
      cursor = page.body.cursor
      pages++
    } while (cursor)
    expect(pongs).toEqual(['e44', 'e33', 'e22', 'e11', 'e0'])
    expect(pages).toBe(3)
  })

  it.each([
    ['limit=0', /limit must be a whole number from 1 to 200 \(got "0"\)/],
    ['limit=201', /limit must be a whole number from 1 to 200 \(got "201"\)/],
    ['limit=ten', /limit must be a whole number from 1 to 200/],
    ['name=no%20spaces', /name: an event name is 1 to 128 letters/],
    ['name=', /name must be an event name \(got an empty value\)/],
    ['name=a&name=b', /name may be given once \(got 2 values\)/],
    ['cursor=somewhere', /cursor must be the cursor of a page of events \(got "somewhere"\); list again without one/],
    ['cursor=', /cursor must be the cursor of the previous page \(got an empty value\)/],
    ['task=receipt', /Unknown query parameter "task"; GET \/__events takes name, limit and cursor/],
  ])('?%s is 400 INVALID_QUERY, saying why', async (query, message) => {
    const server = await start()
    const { status, body } = await list(server.url, `?${query}`)
    expect(status).toBe(400)
    expect(body).toEqual({ code: 'INVALID_QUERY', error: expect.stringMatching(message) })
  })

  it('a page of 50 events of 1 MB each answers in well under 1 MB: the data stays out', async () => {
    const server = await start()
    const data = { blob: 'x'.repeat(1_000_000) }
    for (let i = 0; i < 50; i++) await server.runtime.sendEvent('order.shipped', data, { id: `big-${i}` })
    const res = await fetch(`${server.url}/__events?limit=50`, { headers: AUTH })
    const text = await res.text()
    expect(res.status).toBe(200)
    expect(text.length).toBeLessThan(20_000)
    const { events } = JSON.parse(text)
    expect(events).toHaveLength(50)
    expect(events[0]).toEqual({ id: 'big-49', name: 'order.shipped', time: expect.any(String), size: 1_000_011, runs: [], resumed: [] })
  })

  it('answers 401 without the secret; POST /__events still sends, and /__events/<id> takes GET, HEAD and POST', async () => {
    const server = await start()
    expect((await fetch(`${server.url}/__events`)).status).toBe(401)
    expect((await fetch(`${server.url}/__events/evt-1`)).status).toBe(401)
    expect((await fetch(`${server.url}/__events/`, { headers: AUTH })).status).toBe(200)
    const del = await fetch(`${server.url}/__events/order.paid`, { method: 'DELETE', headers: AUTH })
    expect([del.status, del.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST'])
    const head = await fetch(`${server.url}/__events`, { method: 'HEAD', headers: AUTH })
    expect([head.status, await head.text()]).toEqual([200, ''])
    // /__events itself is read and written: its Allow says both.
    const put = await fetch(`${server.url}/__events`, { method: 'PUT', headers: AUTH, body: '[]' })
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST'])
  })

  it('a store that keeps no list of events answers 501 NOT_IMPLEMENTED, saying so', async () => {
    const store: RunStore = Object.assign(new MemoryRunStore(), { listEvents: undefined })
    const server = await start(store)
    const { status, body } = await list(server.url)
    expect(status).toBe(501)
    expect(body).toEqual({ code: 'NOT_IMPLEMENTED', error: expect.stringMatching(/run store keeps no list of events/) })
  })
})

describe('GET /__events/<id>', () => {
  it('answers one event with its data, its size, the runs it started and the waits it met', async () => {
    const server = await start()
    const waiting = await server.runtime.trigger('fulfil', { orderId: 'o-1' })
    await until(async () => (await server.runtime.getRun(waiting.id))?.status === 'suspended')
    const [paid] = await send(server.url, [{ name: 'order.paid', data: { orderId: 'o-1', note: 'déjà' }, id: 'evt/1' }])
    await server.runtime.waitForRun(paid.runs[0].id)
    await server.runtime.waitForRun(waiting.id)
    const res = await fetch(`${server.url}/__events/${encodeURIComponent('evt/1')}`, { headers: AUTH })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      id: 'evt/1',
      name: 'order.paid',
      data: { orderId: 'o-1', note: 'déjà' },
      time: expect.any(String),
      size: new TextEncoder().encode(JSON.stringify({ orderId: 'o-1', note: 'déjà' })).length,
      runs: [{ id: paid.runs[0].id, taskName: 'receipt', status: 'completed' }],
      resumed: [waiting.id],
    })
  })

  it('finds an event past the first page of the list', async () => {
    const server = await start()
    await send(server.url, [{ name: 'order.shipped', data: 'first', id: 'oldest' }])
    for (let i = 0; i < 3; i++) {
      await send(
        server.url,
        Array.from({ length: 100 }, (_, j) => ({ name: 'ping', id: `p${i}-${j}` })),
      )
    }
    const res = await fetch(`${server.url}/__events/oldest`, { headers: AUTH })
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ id: 'oldest', data: 'first', size: 7 })
  })

  it('an id the store does not hold is 404 EVENT_NOT_FOUND, saying why', async () => {
    const server = await start()
    await send(server.url, [{ name: 'order.shipped', id: 'held' }])
    for (const id of ['missing', '%00']) {
      const res = await fetch(`${server.url}/__events/${id}`, { headers: AUTH })
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({
        code: 'EVENT_NOT_FOUND',
        error: expect.stringMatching(/^No event ".+" is held: it was never sent, or the store no longer holds it/),
      })
    }
    const nested = await fetch(`${server.url}/__events/a/b`, { headers: AUTH })
    expect([nested.status, (await nested.json()).code]).toEqual([404, 'NOT_FOUND'])
  })
})
