// Callback URLs across two servers on one Postgres schema, as two
// processes behind one address would be: the run is started and held by
// one; its callback URL, requested of the other, wakes it, whether it
// waits already (suspended by the first) or is still busy before its wait
// in the first; a second request of the URL wakes nothing.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { RuntimeApiRoute, TaskContext } from '../../src/types.ts'
import { serve, until } from '../http/_helpers.ts'
import { createDatabase } from './_pg.ts'

const SECRET = 's3cret-0123456789abcdef0123456789ab'
const AUTH = { authorization: `Bearer ${SECRET}` }
const PUBLIC = 'https://app.example.com'
const urls = new Map<string, string>()
const gates = new Map<string, Promise<void>>()

const ROUTES: RuntimeApiRoute[] = [
  {
    path: '/api/pay',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext<{ gate?: string }>) => {
        const callback = await ctx.step.createCallback('paid', { timeoutSeconds: 60 })
        await ctx.step.run('hand-out', () => void urls.set(ctx.runId, callback.url))
        if (ctx.input.gate) await ctx.step.run('busy', () => gates.get(ctx.input.gate!))
        return callback.wait()
      },
    },
  },
]

describe('callback URLs across two servers on one Postgres', () => {
  let url: string
  beforeAll(async () => {
    url = await createDatabase('callbacks_shared')
  })
  const stores: PostgresRunStore[] = []
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close()
  })
  const server = (schema: string) => {
    const store = new PostgresRunStore({ url, schema, pollMs: 50 })
    stores.push(store)
    return serve({ apiRoutes: ROUTES, store, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET, SVC_PUBLIC_URL: PUBLIC } })
  }
  const record = async (base: string, id: string) =>
    (await (await fetch(`${base}/__tasks/runs/${id}`, { headers: AUTH })).json()) as Record<string, any>

  it('a callback requested of one server wakes the run the other holds, waiting or busy, once', async () => {
    const holder = await server('c1')
    const other = await server('c1')
    let release!: () => void
    gates.set('g', new Promise<void>((resolve) => (release = resolve)))
    const start = async (input: Record<string, unknown>) => {
      const res = await fetch(`${holder.url}/__tasks/pay`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(input),
      })
      const { id } = (await res.json()) as { id: string }
      await until(() => urls.has(id))
      return { id, url: urls.get(id)!.replace(PUBLIC, other.url) }
    }
    const waiting = await start({})
    const busy = await start({ gate: 'g' })
    await until(async () => (await record(holder.url, waiting.id)).status === 'suspended')
    expect((await fetch(waiting.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"paid":1}' })).status).toBe(
      202,
    )
    expect((await fetch(busy.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"paid":2}' })).status).toBe(
      202,
    )
    expect((await record(holder.url, busy.id)).status).toBe('running')
    release()
    const done = await Promise.all(
      [waiting, busy].map(({ id }) =>
        until(async () => {
          const run = await record(holder.url, id)
          return run.status === 'completed' ? run : undefined
        }),
      ),
    )
    expect(done.map((run) => run.result.body)).toEqual([{ paid: 1 }, { paid: 2 }])
    const again = await fetch(waiting.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"paid":3}' })
    expect([409, 410]).toContain(again.status)
    await holder.close()
    await other.close()
  })
})
