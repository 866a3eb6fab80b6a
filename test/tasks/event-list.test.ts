/**
 * `TaskRuntime.listEvents`: the events a store holds, newest first, each
 * with the runs it started and the waits it met, whichever side met them:
 * the send, or a wait's own look at the events already recorded (before it
 * suspends, or once its waitpoint is armed).
 */
import { describe, expect, it } from 'vitest'
import { SvcError } from '../../src/runtime/errors.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import type { TaskContext } from '../../src/types.ts'
import { finished, runtime, storeSendingDuringFirstLook, task, until } from './_helpers.ts'

const receipt = task('orders.receipt', (ctx: TaskContext) => ctx.input, { route: { on: 'order.paid' } })
const audit = task('orders.audit', () => 'seen', { route: { on: ['order.paid', 'order.refunded'] } })
const fulfil = task('orders.fulfil', (ctx: TaskContext<{ orderId: string; lookbackSeconds?: number }>) =>
  ctx.step.waitForEvent('paid', 'order.paid', { match: { orderId: ctx.input.orderId }, lookbackSeconds: ctx.input.lookbackSeconds }),
)

describe('TaskRuntime.listEvents', () => {
  it('lists each event with the runs it started, their status now, and the waits it met', async () => {
    const rt = runtime([receipt, audit, fulfil])
    const waiting = await rt.trigger('orders.fulfil', { orderId: 'o-1' })
    await until(async () => (await rt.getRun(waiting.id))?.status === 'suspended')
    const paid = await rt.sendEvent('order.paid', { orderId: 'o-1' }, { id: 'evt-1' })
    expect(paid.resumed).toEqual([waiting.id])
    await rt.sendEvent('order.refunded', undefined, { id: 'evt-2' })
    for (const run of paid.runs) await finished(rt.waitForRun(run.id))
    await finished(rt.waitForRun(waiting.id))
    const page = await rt.listEvents()
    expect(page.cursor).toBeUndefined()
    expect(page.events.map((event) => event.id)).toEqual(['evt-2', 'evt-1'])
    expect(page.events[1]).toEqual({
      id: 'evt-1',
      name: 'order.paid',
      data: { orderId: 'o-1' },
      time: expect.any(String),
      runs: [
        { id: paid.runs[0].id, taskName: 'orders.receipt', status: 'completed' },
        { id: paid.runs[1].id, taskName: 'orders.audit', status: 'completed' },
      ],
      resumed: [waiting.id],
    })
    expect(page.events[0]).toMatchObject({ runs: [{ taskName: 'orders.audit' }], resumed: [] })
    expect('data' in page.events[0]).toBe(false)
  })

  it('an event sent again is listed once, its runs once', async () => {
    const rt = runtime([receipt])
    const first = await rt.sendEvent('order.paid', { orderId: 'o-2' }, { id: 'same' })
    await rt.sendEvent('order.paid', { orderId: 'o-2' }, { id: 'same' })
    const { events } = await rt.listEvents({ name: 'order.paid' })
    expect(events).toHaveLength(1)
    expect(events[0].runs.map((run) => run.id)).toEqual([first.runs[0].id])
  })

  it('a wait met by an event recorded before it began is listed under that event', async () => {
    const rt = runtime([fulfil])
    await rt.sendEvent('order.paid', { orderId: 'early' }, { id: 'evt-early' })
    const run = await rt.trigger('orders.fulfil', { orderId: 'early', lookbackSeconds: 60 })
    await finished(rt.waitForRun(run.id))
    expect((await rt.listEvents()).events).toMatchObject([{ id: 'evt-early', runs: [], resumed: [run.id] }])
  })

  it('a wait met by an event sent while its run was suspending is listed under that event', async () => {
    let rt!: ReturnType<typeof runtime>
    // The wait's first look finds nothing, and the event is sent right then:
    // the send finds no run waiting, and the look once the wait is armed meets it.
    rt = runtime([fulfil], {
      store: storeSendingDuringFirstLook(async () => {
        expect((await rt.sendEvent('order.paid', { orderId: 'o-9' }, { id: 'evt-between' })).resumed).toEqual([])
      }),
    })
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-9' })
    await finished(rt.waitForRun(run.id))
    expect((await rt.listEvents()).events).toMatchObject([{ id: 'evt-between', resumed: [run.id] }])
  })

  it('leaves out a run the store no longer holds', async () => {
    const store = new MemoryRunStore({ maxRuns: 1 })
    const rt = runtime([receipt], { store })
    const first = await rt.sendEvent('order.paid', { orderId: 'a' }, { id: 'a' })
    await finished(rt.waitForRun(first.runs[0].id))
    const second = await rt.sendEvent('order.paid', { orderId: 'b' }, { id: 'b' })
    await finished(rt.waitForRun(second.runs[0].id))
    const { events } = await rt.listEvents()
    expect(events.map((event) => [event.id, event.runs.map((run) => run.id)])).toEqual([
      ['b', [second.runs[0].id]],
      ['a', []],
    ])
  })

  it('pages by cursor, and refuses a bad query with the rule it breaks', async () => {
    const rt = runtime([])
    for (let i = 0; i < 3; i++) await rt.sendEvent('tick', i, { id: `t${i}` })
    const first = await rt.listEvents({ limit: 2 })
    expect(first.events.map((event) => event.data)).toEqual([2, 1])
    expect((await rt.listEvents({ limit: 2, cursor: first.cursor })).events.map((event) => event.data)).toEqual([0])
    await expect(rt.listEvents({ limit: 201 })).rejects.toThrow(
      new RangeError('listEvents(): limit must be a whole number from 1 to 200 (got 201)'),
    )
    await expect(rt.listEvents({ name: 'no spaces' })).rejects.toThrow(TypeError)
    await expect(rt.listEvents({ cursor: 'nowhere' })).rejects.toThrow(/cursor must be the cursor of a page of events \(got "nowhere"\)/)
  })

  it('is NOT_IMPLEMENTED (501) on a store that keeps no list of events', async () => {
    const rt = runtime([], { store: Object.assign(new MemoryRunStore(), { listEvents: undefined }) })
    const error = await rt.listEvents().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SvcError)
    expect(error).toMatchObject({ code: 'NOT_IMPLEMENTED', status: 501 })
  })
})
