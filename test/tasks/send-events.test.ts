/**
 * Events that start tasks: `sendEvent` starts one run of every task whose
 * `on` names the event, with its data as input, exactly once per (task,
 * event id) however often the event is sent; data that does not fit a
 * task's input is a failed run naming the event, and the other tasks still
 * start. On the memory store, and on one SQLite file that two runtimes
 * share, standing for two processes racing to send the same event.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as v from 'valibot'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import type { TaskContext } from '../../src/types.ts'
import { finished, runtime, task } from './_helpers.ts'

const paid = v.object({ orderId: v.string() })

function routes(seen: string[] = []) {
  return [
    task('orders.receipt', async (ctx: TaskContext<{ orderId: string }>) => seen.push(`receipt ${ctx.input.orderId}`), {
      route: { on: 'order.paid' },
      input: paid,
    }),
    task('orders.ship', async (ctx: TaskContext<{ orderId: string }>) => seen.push(`ship ${ctx.input.orderId}`), {
      route: { on: ['order.paid', 'order.retry'] },
    }),
    task('orders.untouched', async () => 'never', { route: { on: 'order.refunded' } }),
  ]
}

describe('sendEvent', () => {
  it('starts one run of each task on the event, with its data as input, trigger event and the event named', async () => {
    const seen: string[] = []
    const rt = runtime(routes(seen))
    const sent = await rt.sendEvent('order.paid', { orderId: 'o-42' }, { id: 'evt-1' })
    expect(sent).toMatchObject({ id: 'evt-1', name: 'order.paid' })
    expect(sent.runs.map((run) => run.taskName)).toEqual(['orders.receipt', 'orders.ship'])
    for (const { id } of sent.runs) {
      const run = await finished(rt.waitForRun(id))
      expect(run).toMatchObject({
        status: 'completed',
        trigger: 'event',
        input: { orderId: 'o-42' },
        event: { id: 'evt-1', name: 'order.paid' },
      })
    }
    expect(seen.sort()).toEqual(['receipt o-42', 'ship o-42'])
  })

  it('the same id sent again is the same event: it answers with the runs of the first send and starts none', async () => {
    const seen: string[] = []
    const rt = runtime(routes(seen))
    const first = await rt.sendEvent('order.paid', { orderId: 'o-1' }, { id: 'evt-dup' })
    const again = await rt.sendEvent('order.paid', { orderId: 'o-1' }, { id: 'evt-dup' })
    expect(again.runs.map((run) => run.id)).toEqual(first.runs.map((run) => run.id))
    await Promise.all(first.runs.map(({ id }) => finished(rt.waitForRun(id))))
    expect(seen).toHaveLength(2)
    expect(await rt.listRuns()).toHaveLength(2)
  })

  it('without an id, each send is a new event with a UUID of its own', async () => {
    const rt = runtime(routes())
    const [a, b] = [await rt.sendEvent('order.retry', { orderId: 'x' }), await rt.sendEvent('order.retry', { orderId: 'x' })]
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(b.id).not.toBe(a.id)
    expect([a.runs.length, b.runs.length]).toEqual([1, 1])
  })

  it('an event no task is on starts nothing', async () => {
    const rt = runtime(routes())
    expect((await rt.sendEvent('nobody.listens', { a: 1 })).runs).toEqual([])
    expect(await rt.listRuns()).toEqual([])
  })

  it("data that does not fit a task's input is a failed run there naming the event; the other tasks start", async () => {
    const seen: string[] = []
    const rt = runtime(routes(seen))
    const sent = await rt.sendEvent('order.paid', { orderId: 42 }, { id: 'evt-bad' })
    const [receipt, ship] = sent.runs
    expect(receipt).toMatchObject({ taskName: 'orders.receipt', status: 'failed' })
    const failed = (await rt.getRun(receipt.id))!
    expect(failed).toMatchObject({ ok: false, trigger: 'event', event: { id: 'evt-bad', name: 'order.paid' }, input: { orderId: 42 } })
    expect(failed.attempts[0].error).toMatch(/^event "order\.paid" \(id evt-bad\) does not fit the input of task "orders\.receipt": /)
    expect(rt.logger.text('warn')).toContain('does not fit the input of task "orders.receipt"')
    expect((await finished(rt.waitForRun(ship.id))).status).toBe('completed')
    // Sent again, the failure is the answer again: no second failed run.
    expect((await rt.sendEvent('order.paid', { orderId: 42 }, { id: 'evt-bad' })).runs[0].id).toBe(receipt.id)
  })

  it.each([
    ['', /an event name is 1 to 128 letters, digits/],
    ['order paid', /\(got "order paid"\)/],
    ['x'.repeat(129), /an event name is 1 to 128/],
    [42, /\(got 42\)/],
  ])('a bad name (%j) is a TypeError, and nothing starts', async (name, message) => {
    const rt = runtime(routes())
    await expect(rt.sendEvent(name as string, {})).rejects.toThrow(message)
    expect(await rt.listRuns()).toEqual([])
  })

  it('a bad id or data that is no JSON is refused before anything starts', async () => {
    const rt = runtime(routes())
    await expect(rt.sendEvent('order.paid', {}, { id: '' })).rejects.toThrow(/an event id is 1 to 200 characters/)
    await expect(rt.sendEvent('order.paid', {}, { id: 'a\nb' })).rejects.toThrow(TypeError)
    await expect(rt.sendEvent('order.paid', { when: 1n })).rejects.toThrow(/cannot be stored as JSON/)
    expect(await rt.listRuns()).toEqual([])
  })
})

describe('sendEvents', () => {
  it('sends each event of the list, and checks every one before sending any', async () => {
    const rt = runtime(routes())
    const sent = await rt.sendEvents([
      { name: 'order.paid', data: { orderId: 'a' }, id: 'e1' },
      { name: 'order.retry', data: { orderId: 'b' }, id: 'e2' },
    ])
    expect(sent.map((event) => [event.id, event.runs.length])).toEqual([
      ['e1', 2],
      ['e2', 1],
    ])
    await expect(rt.sendEvents([{ name: 'order.paid', data: {} }, { name: 'bad name' }])).rejects.toThrow(/^sendEvents\(\): event 1: /)
    await expect(rt.sendEvents(Array.from({ length: 101 }, () => ({ name: 'order.paid' })))).rejects.toThrow(RangeError)
    expect(await rt.listRuns()).toHaveLength(3)
  })
})

describe('tasks on events', () => {
  it.each([
    [[] as string[], /on must be an event name or a non-empty list/],
    ['bad name', /on: an event name is 1 to 128/],
    [['a.b', 'a.b'], /on names the event "a\.b" twice/],
  ])('a task whose on is %j fails createTaskRuntime, naming the task', (on, message) => {
    expect(() => runtime([task('bad', () => 1, { route: { on } as never })])).toThrow(message)
  })
})

describe('an event sent from two processes sharing one SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-events-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('starts one run per task, whichever process sends it and however many times', async () => {
    const path = join(dir, 'runs.db')
    const seen: string[] = []
    const stores = [new SqliteRunStore({ path, shared: true }), new SqliteRunStore({ path, shared: true })]
    const [a, b] = stores.map((store) => runtime(routes(seen), { store }))
    await Promise.all([a.recover(), b.recover()])
    const sends = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).sendEvent('order.paid', { orderId: 'o-7' }, { id: 'evt-race' })),
    )
    const ids = new Set(sends.flatMap((sent) => sent.runs.map((run) => run.id)))
    expect(ids.size).toBe(2)
    for (const id of ids) expect((await finished(a.waitForRun(id))).status).toBe('completed')
    expect(seen.sort()).toEqual(['receipt o-7', 'ship o-7'])
    await Promise.all([a.close(), b.close()])
    for (const store of stores) await store.close()
  })
})
