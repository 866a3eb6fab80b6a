/**
 * Typed events: an app's event schemas (`events`, the export of
 * `src/events.ts`) check the data of every send of a name they declare,
 * in-process and over HTTP, before anything is recorded; the data kept,
 * started runs and met waits get is what the schema outputs. Names without
 * a schema are sent unchecked.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { MemoryRunStore, ValidationError, type TaskContext } from '../../src/index.ts'
import { serve } from '../http/_helpers.ts'
import { finished, runtime, task } from './_helpers.ts'

const SECRET = 'typed-events-secret-0123456789abcdef'

const events = {
  'order.paid': v.object({ orderId: v.string(), total: v.number() }),
  'order.refunded': z.object({ orderId: z.string(), amount: z.string().transform(Number) }),
}

const routes = () => [
  task('orders.receipt', async (ctx: TaskContext<{ orderId: string; total: number }>) => ctx.input, { route: { on: 'order.paid' } }),
  task('orders.refund', async (ctx: TaskContext<{ amount: number }>) => typeof ctx.input.amount, { route: { on: 'order.refunded' } }),
  task('orders.any', async (ctx) => ctx.input, { route: { on: 'order.noted' } }),
]

describe('event schemas', () => {
  it('refuse data that breaks a declared schema with a ValidationError naming the event; nothing is recorded or started', async () => {
    const rt = runtime(routes(), { events })
    const error = await rt.sendEvent('order.paid', { orderId: 'o-1', total: '12' }, { id: 'e-1' }).catch((e) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect(error.message).toMatch(
      /^sendEvent\("order\.paid"\): the data of event "order\.paid" does not fit its schema in src\/events\.ts: /,
    )
    expect(error.details[0]).toMatchObject({ target: 'data', path: ['total'] })
    expect(await rt.listRuns()).toEqual([])
    // The id was not taken: a good send with it now starts the run.
    const sent = await rt.sendEvent('order.paid', { orderId: 'o-1', total: 12 }, { id: 'e-1' })
    expect(sent.runs).toHaveLength(1)
    expect(await finished(rt.waitForRun(sent.runs[0].id))).toMatchObject({ status: 'completed', result: { orderId: 'o-1', total: 12 } })
  })

  it('check every event of a list before sending any: one bad event sends none', async () => {
    const rt = runtime(routes(), { events })
    const error = await rt
      .sendEvents([
        { name: 'order.paid', data: { orderId: 'a', total: 1 } },
        { name: 'order.paid', data: { orderId: 'b' } },
      ])
      .catch((e) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect(error.message).toMatch(/^sendEvents\(\): event 1: the data of event "order\.paid"/)
    expect(await rt.listRuns()).toEqual([])
  })

  it('keep what the schema outputs: started runs and met waits get the transformed data', async () => {
    const waiter = task('orders.wait', async (ctx) => {
      const got = await ctx.step.waitForEvent('refund', 'order.refunded', { match: { orderId: 'o-2' } })
      return 'event' in got ? got.event.data : got
    })
    const rt = runtime([...routes(), waiter], { events })
    const waiting = await rt.trigger('orders.wait')
    await expect.poll(async () => (await rt.getRun(waiting.id))?.status).toBe('suspended')
    const sent = await rt.sendEvent('order.refunded', { orderId: 'o-2', amount: '7.5' })
    expect(sent.resumed).toEqual([waiting.id])
    expect(await finished(rt.waitForRun(sent.runs[0].id))).toMatchObject({ input: { amount: 7.5 }, result: 'number' })
    expect(await finished(rt.waitForRun(waiting.id))).toMatchObject({ result: { orderId: 'o-2', amount: 7.5 } })
  })

  it('leave names without a schema unchecked', async () => {
    const rt = runtime(routes(), { events })
    const sent = await rt.sendEvent('order.noted', { anything: ['goes'] })
    expect(await finished(rt.waitForRun(sent.runs[0].id))).toMatchObject({ result: { anything: ['goes'] } })
  })

  it('are checked when the runtime is made: a bad name or a value that is no schema is a TypeError naming it', () => {
    expect(() => runtime(routes(), { events: { 'bad name': events['order.paid'] } })).toThrow(
      /^createTaskRuntime\(\): events: an event name is 1 to 128 letters/,
    )
    expect(() => runtime(routes(), { events: { 'order.paid': { type: 'object' } } as never })).toThrow(
      /^createTaskRuntime\(\): events\["order\.paid"\] must be a Standard Schema/,
    )
    expect(() => runtime(routes(), { events: [] as never })).toThrow(/events must be an object of event name → schema/)
  })

  it('over HTTP: data that breaks the schema is 400 VALIDATION_FAILED with the issues, and starts nothing', async () => {
    const server = await serve({
      apiRoutes: [
        {
          path: '/api/orders/receipt',
          module: { route: { kind: 'task', on: 'order.paid' }, POST: (ctx: TaskContext) => ctx.input },
        },
      ],
      events,
      env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET },
      store: new MemoryRunStore(),
    })
    const headers = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
    const bad = await fetch(`${server.url}/__events/order.paid`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ orderId: 1, total: 2 }),
    })
    expect(bad.status).toBe(400)
    const body = await bad.json()
    expect(body).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ target: 'data', path: ['orderId'] }] })
    expect(body.error).toMatch(/the data of event "order\.paid" does not fit its schema/)
    expect(await server.runtime.listRuns()).toEqual([])
    const good = await fetch(`${server.url}/__events/order.paid`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ orderId: 'o-9', total: 3 }),
    })
    expect(good.status).toBe(202)
  })
})
