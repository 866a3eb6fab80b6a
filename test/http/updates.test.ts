/**
 * Updates over a real server on port 0 (`POST /__tasks/runs/<id>/updates/<name>`,
 * `GET /__tasks/runs/<id>/updates`): the secret's holder gets the run's
 * answer; the same Idempotency-Key gets the same answer and the handler
 * runs once; every refusal (bad data, a handler that throws, no handler of
 * the name, an unknown or finished run, a bad name or timeout, no secret, a
 * body that is not JSON, a run holding the most unanswered updates) is its
 * own clear status and code; a run that cannot answer yet gets 202 pending,
 * and the same id gets its answer once the run has given it.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { MAX_PENDING_UPDATES } from '../../src/runtime/tasks/store/update-records.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 'upd4tes-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }

/** The items each `add` handler call was given, replays included. */
const calls: string[] = []

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/cart',
    module: {
      kind: 'task',
      // A cart that takes items until checkout.
      POST: async (ctx: TaskContext) => {
        const items: string[] = []
        ctx.onUpdate('add', {
          input: v.object({ item: v.pipe(v.string(), v.minLength(1)) }),
          handler: ({ item }) => {
            calls.push(item)
            if (item === 'bomb') throw new Error('no bombs in carts')
            items.push(item)
            return { count: items.length }
          },
        })
        ctx.onUpdate('clear', { handler: () => undefined })
        await ctx.step.waitForSignal('checkout', 'checkout')
        return items
      },
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = () => serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })

const record = async (server: Server, id: string) =>
  (await (await fetch(`${server.url}/__tasks/runs/${id}`, { headers: AUTH })).json()) as Record<string, any>

/** A cart run, waiting for its checkout (or, with `delaySeconds`, not started yet). */
async function cart(server: Server, delaySeconds?: number): Promise<string> {
  const headers = delaySeconds === undefined ? AUTH : { ...AUTH, 'svc-delay-seconds': String(delaySeconds) }
  const res = await fetch(`${server.url}/__tasks/cart`, { method: 'POST', headers })
  const { id } = (await res.json()) as { id: string }
  const status = delaySeconds === undefined ? 'suspended' : 'scheduled'
  await until(async () => (await record(server, id)).status === status)
  return id
}

async function update(
  server: Server,
  id: string,
  name: string,
  body?: unknown,
  { headers = AUTH, query = '' }: { headers?: Record<string, string>; query?: string } = {},
) {
  const res = await fetch(`${server.url}/__tasks/runs/${encodeURIComponent(id)}/updates/${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, any> }
}

const listed = async (server: Server, id: string) =>
  ((await (await fetch(`${server.url}/__tasks/runs/${id}/updates`, { headers: AUTH })).json()) as { updates: Record<string, any>[] })
    .updates

const key = (id: string) => ({ ...AUTH, 'idempotency-key': id })

describe('updates over HTTP', () => {
  it("answer 200 with the handler's result; the same Idempotency-Key gets the same answer, and the handler runs once", async () => {
    calls.length = 0
    const server = await start()
    const id = await cart(server)
    const first = await update(server, id, 'add', { item: 'apple' }, { headers: key('u-1') })
    expect(first).toEqual({
      status: 200,
      retryAfter: null,
      body: { id: 'u-1', runId: id, name: 'add', status: 'completed', result: { count: 1 } },
    })
    expect(calls).toEqual(['apple'])
    // Other data under the same id is the same update: its kept answer.
    expect(await update(server, id, 'add', { item: 'pear' }, { headers: key('u-1') })).toEqual(first)
    expect(calls).toEqual(['apple'])
    // A handler that returns nothing: no result.
    expect(await update(server, id, 'clear', undefined, { headers: key('u-2') })).toEqual({
      status: 200,
      retryAfter: null,
      body: { id: 'u-2', runId: id, name: 'clear', status: 'completed' },
    })
    // With no Idempotency-Key the server picks an id.
    const picked = await update(server, id, 'add', { item: 'pear' })
    expect(picked).toMatchObject({ status: 200, body: { id: expect.any(String), result: { count: 2 } } })
    expect(picked.body.id).not.toBe('u-1')
    expect((await listed(server, id)).map((u) => [u.id, u.name, u.status, u.result])).toEqual([
      ['u-1', 'add', 'completed', { count: 1 }],
      ['u-2', 'clear', 'completed', undefined],
      [picked.body.id, 'add', 'completed', { count: 2 }],
    ])
    expect((await record(server, id)).status).toBe('suspended')
  })

  it('refuses bad data 400 VALIDATION_FAILED with details, a throwing handler 422, an undeclared name 404, and the run goes on', async () => {
    const server = await start()
    const id = await cart(server)
    const invalid = await update(server, id, 'add', { item: '' }, { headers: key('bad') })
    expect(invalid).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED', error: expect.any(String) } })
    expect(invalid.body.details).toEqual([expect.objectContaining({ path: ['item'], message: expect.any(String) })])
    expect(await update(server, id, 'add', { item: 'bomb' }, { headers: key('boom') })).toMatchObject({
      status: 422,
      body: { code: 'UPDATE_FAILED', error: expect.stringContaining('no bombs in carts') },
    })
    expect(await update(server, id, 'remove', { item: 'apple' })).toMatchObject({ status: 404, body: { code: 'UPDATE_NOT_HANDLED' } })
    // Asked again, each keeps its answer.
    expect(await update(server, id, 'add', { item: 'bomb' }, { headers: key('boom') })).toMatchObject({ status: 422 })
    expect(await update(server, id, 'add', { item: 'apple' })).toMatchObject({ status: 200, body: { result: { count: 1 } } })
    expect((await listed(server, id)).map((u) => [u.name, u.status, u.error?.code])).toEqual([
      ['add', 'rejected', 'VALIDATION_FAILED'],
      ['add', 'failed', 'UPDATE_FAILED'],
      ['remove', 'rejected', 'UPDATE_NOT_HANDLED'],
      ['add', 'completed', undefined],
    ])
    const signal = await fetch(`${server.url}/__tasks/runs/${id}/signals/checkout`, { method: 'POST', headers: AUTH })
    expect(signal.status).toBe(202)
    const done = await until(async () => {
      const run = await record(server, id)
      return run.status === 'completed' && run
    })
    expect(done.result).toEqual(['apple'])
    // Finished: a new update is 409; an answered one still gets its answer.
    expect(await update(server, id, 'add', { item: 'late' })).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })
    expect(await update(server, id, 'add', { item: 'bomb' }, { headers: key('boom') })).toMatchObject({ status: 422 })
  })

  it('refuses an unknown run, a bad name, id or timeout, no secret, and a body that is not JSON, keeping nothing', async () => {
    const server = await start()
    const id = await cart(server)
    expect(await update(server, 'no-such-run', 'add', { item: 'x' })).toMatchObject({ status: 404, body: { code: 'RUN_NOT_FOUND' } })
    expect(await update(server, id, 'no spaces', { item: 'x' })).toMatchObject({ status: 400, body: { code: 'INVALID_UPDATE' } })
    expect(await update(server, id, 'add', { item: 'x' }, { headers: key('x'.repeat(201)) })).toMatchObject({
      status: 400,
      body: { code: 'INVALID_UPDATE', error: expect.stringContaining('Idempotency-Key') },
    })
    for (const timeout of ['abc', '0', '-1', '301', '', '0x10', '1e2', '%205']) {
      expect(await update(server, id, 'add', { item: 'x' }, { query: `?timeout=${timeout}` }), timeout).toMatchObject({
        status: 400,
        body: { code: 'INVALID_UPDATE', error: expect.stringContaining('?timeout=') },
      })
    }
    expect(await update(server, id, 'add', { item: 'x' }, { headers: {} })).toMatchObject({ status: 401 })
    expect(await update(server, id, 'add', { item: 'x' }, { headers: { authorization: 'Bearer wrong' } })).toMatchObject({ status: 401 })
    const url = `${server.url}/__tasks/runs/${id}/updates/add`
    const text = await fetch(url, { method: 'POST', headers: { ...AUTH, 'content-type': 'text/plain' }, body: '{"item":"x"}' })
    expect(text.status).toBe(415)
    const bad = await fetch(url, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: '{not json' })
    expect(bad.status).toBe(400)
    const get = await fetch(url, { headers: AUTH })
    expect(get.status).toBe(405)
    expect(await listed(server, id)).toEqual([])
    expect((await fetch(`${server.url}/__tasks/runs/no-such-run/updates`, { headers: AUTH })).status).toBe(404)
    expect((await record(server, id)).status).toBe('suspended')
  })

  it('answers 202 pending past ?timeout= while the run cannot answer; the same id gets 200 once it has started and answered', async () => {
    calls.length = 0
    const server = await start()
    const id = await cart(server, 3600)
    const pending = await update(server, id, 'add', { item: 'early' }, { headers: key('e-1'), query: '?timeout=0.2' })
    expect(pending).toMatchObject({
      status: 202,
      body: { id: 'e-1', runId: id, name: 'add', status: 'pending', error: expect.stringContaining('ask again with id "e-1"') },
    })
    expect(await listed(server, id)).toEqual([expect.objectContaining({ id: 'e-1', status: 'pending', data: { item: 'early' } })])
    expect((await record(server, id)).status).toBe('scheduled')
    // Started now: it answers what it holds at its first wait.
    expect((await fetch(`${server.url}/__tasks/runs/${id}/wake`, { method: 'POST', headers: AUTH })).status).toBe(200)
    await until(async () => (await listed(server, id))[0]?.status === 'completed')
    expect(await update(server, id, 'add', { item: 'ignored' }, { headers: key('e-1'), query: '?timeout=0.2' })).toEqual({
      status: 200,
      retryAfter: null,
      body: { id: 'e-1', runId: id, name: 'add', status: 'completed', result: { count: 1 } },
    })
    expect(calls).toEqual(['early'])
  })

  it(`refuses a run holding ${MAX_PENDING_UPDATES} unanswered updates with 429 TOO_MANY_UPDATES and Retry-After`, async () => {
    const server = await start()
    const id = await cart(server, 3600)
    const answers = await Promise.all(
      Array.from({ length: MAX_PENDING_UPDATES }, (_, i) => update(server, id, 'add', { item: `i${i}` }, { query: '?timeout=0.2' })),
    )
    expect(answers.every((a) => a.status === 202)).toBe(true)
    expect(await update(server, id, 'add', { item: 'more' }, { query: '?timeout=0.2' })).toMatchObject({
      status: 429,
      retryAfter: '5',
      body: { code: 'TOO_MANY_UPDATES' },
    })
    expect(await listed(server, id)).toHaveLength(MAX_PENDING_UPDATES)
  })
})
