/**
 * An event that does not fit in the memory store beside its live runs
 * (`maxBytes` counts runs and events together) is refused over HTTP with
 * 503 `STORE_FULL` and `Retry-After`, and nothing of it is kept.
 */
import { expect, it } from 'vitest'
import { MemoryRunStore, type RuntimeApiRoute, type TaskContext } from '../../src/index.ts'
import { serve, until } from './_helpers.ts'

const SECRET = 'full-store-secret-0123456789abcdef0123'
const AUTH = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }

it('POST /__events answers 503 STORE_FULL for an event that does not fit beside the live runs, and keeps nothing of it', async () => {
  const store = new MemoryRunStore({ maxBytes: 1_000_000 })
  // A live run that holds most of the bound: it waits for a token.
  const routes: RuntimeApiRoute[] = [
    { path: '/api/hold', module: { kind: 'task', POST: (ctx: TaskContext) => ctx.step.waitForToken('never') } },
  ]
  const server = await serve({ apiRoutes: routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store })
  const run = await server.runtime.trigger('hold', 'x'.repeat(900_000))
  await until(async () => (await store.getRun(run.id))?.status === 'suspended')
  const res = await fetch(`${server.url}/__events/order.paid`, {
    method: 'POST',
    headers: { ...AUTH, 'idempotency-key': 'evt-big' },
    body: JSON.stringify({ note: 'y'.repeat(200_000) }),
  })
  expect(res.status).toBe(503)
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(((await res.json()) as { code: string }).code).toBe('STORE_FULL')
  expect((await store.listEvents({ limit: 10 })).events).toEqual([])
})
