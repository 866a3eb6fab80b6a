/**
 * Signals over a real server on port 0 (`POST /__tasks/runs/<id>/signals/<name>`,
 * `GET /__tasks/runs/<id>/signals`): the secret's holder resumes a waiting
 * run, an id sent again is kept once, and every refusal (no secret, a bad
 * name, an unknown or finished run, a run holding the most untaken signals)
 * is a clear 4xx that keeps nothing. The client's `sendSignal` reaches the
 * same endpoint.
 */
import { describe, expect, it } from 'vitest'
import { MAX_WAITING_SIGNALS, MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { sendSignalOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/approve',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext) => {
        const first = await ctx.step.waitForSignal('first', 'decision')
        const second = await ctx.step.waitForSignal('second', 'decision')
        return [first, second]
      },
    },
  },
]

type Server = Awaited<ReturnType<typeof serve>>

const start = () => serve({ apiRoutes: ROUTES, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })

async function started(server: Server): Promise<string> {
  const res = await fetch(`${server.url}/__tasks/approve`, { method: 'POST', headers: AUTH })
  const { id } = (await res.json()) as { id: string }
  await until(async () => (await record(server, id)).status === 'suspended')
  return id
}

const record = async (server: Server, id: string) =>
  (await (await fetch(`${server.url}/__tasks/runs/${id}`, { headers: AUTH })).json()) as Record<string, any>

async function signal(server: Server, id: string, name: string, body?: unknown, headers: Record<string, string> = AUTH) {
  const res = await fetch(`${server.url}/__tasks/runs/${encodeURIComponent(id)}/signals/${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, any> }
}

describe('signals over HTTP', () => {
  it('resume a waiting run with their JSON data, in order; an id sent again is kept once', async () => {
    const server = await start()
    const id = await started(server)
    expect(await signal(server, id, 'decision', { ok: true }, { ...AUTH, 'idempotency-key': 'd-1' })).toMatchObject({
      status: 202,
      body: { id: 'd-1', runId: id, name: 'decision', duplicate: false },
    })
    expect(await signal(server, id, 'decision', { ok: 'again' }, { ...AUTH, 'idempotency-key': 'd-1' })).toMatchObject({
      status: 202,
      body: { id: 'd-1', duplicate: true },
    })
    // Over the client's path too, with no data.
    const env = { SVC_TASK_URL: server.url, SVC_TASK_SECRET: SECRET }
    expect(await sendSignalOverHttp(id, 'decision', undefined, undefined, env)).toMatchObject({ runId: id, duplicate: false })
    const done = await until(async () => {
      const current = await record(server, id)
      return current.status === 'completed' && current
    })
    expect(done.result).toEqual([
      { id: 'd-1', name: 'decision', data: { ok: true }, sentAt: expect.any(String) },
      { id: expect.any(String), name: 'decision', sentAt: expect.any(String) },
    ])
    const listed = await (await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: AUTH })).json()
    expect((listed as { signals: unknown[] }).signals).toHaveLength(2)
    // The run finished: 409, nothing kept.
    expect(await signal(server, id, 'decision', 1)).toMatchObject({ status: 409, body: { code: 'RUN_FINISHED' } })
    expect(
      ((await (await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: AUTH })).json()) as { signals: unknown[] }).signals,
    ).toHaveLength(2)
  })

  it('refuses without the secret, a bad name or id, an unknown run, and a run holding the most signals, keeping nothing', async () => {
    const server = await start()
    const id = await started(server)
    expect(await signal(server, id, 'decision', 1, {})).toMatchObject({ status: 401 })
    expect(await signal(server, id, 'decision', 1, { authorization: 'Bearer wrong' })).toMatchObject({ status: 401 })
    expect(await signal(server, id, 'no spaces', 1)).toMatchObject({ status: 400, body: { code: 'INVALID_SIGNAL' } })
    expect(await signal(server, id, 'decision', 1, { ...AUTH, 'idempotency-key': 'x'.repeat(201) })).toMatchObject({
      status: 400,
      body: { code: 'INVALID_SIGNAL', error: expect.stringContaining('Idempotency-Key') },
    })
    expect(await signal(server, 'no-such-run', 'decision', 1)).toMatchObject({ status: 404, body: { code: 'RUN_NOT_FOUND' } })
    const bad = await fetch(`${server.url}/__tasks/runs/${id}/signals/decision`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: '{not json',
    })
    expect(bad.status).toBe(400)
    const get = await fetch(`${server.url}/__tasks/runs/${id}/signals/decision`, { headers: AUTH })
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST, OPTIONS')
    // Signals of a name the run does not wait for stay until the bound.
    for (let i = 0; i < MAX_WAITING_SIGNALS; i++) expect((await signal(server, id, 'note', i)).status).toBe(202)
    const full = await signal(server, id, 'note', 'one more')
    expect(full).toMatchObject({ status: 429, retryAfter: '5', body: { code: 'TOO_MANY_SIGNALS' } })
    const listed = (await (await fetch(`${server.url}/__tasks/runs/${id}/signals`, { headers: AUTH })).json()) as { signals: unknown[] }
    expect(listed.signals).toHaveLength(MAX_WAITING_SIGNALS)
    expect((await record(server, id)).status).toBe('suspended')
  })
})
