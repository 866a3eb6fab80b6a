/**
 * `ctx.step.waitForEvent`: a run waits for an event of a name whose data
 * holds the values of `match`, resumes once with it (or `{ timedOut: true }`),
 * and replays with the same event. An event sent just before the wait, or
 * while the run was suspending, is not lost.
 */
import { describe, expect, it } from 'vitest'
import { eventWaitTokenId } from '../../src/runtime/tasks/steps/wait-for-event.ts'
import type { TaskContext, WaitForEventOptions } from '../../src/types.ts'
import { finished, runtime, sleep, storeSendingDuringFirstLook, task, until } from './_helpers.ts'

interface Input {
  orderId: string
  opts?: WaitForEventOptions
}

function waiting(calls: string[] = []) {
  return task('orders.fulfil', async (ctx: TaskContext<Input>) => {
    await ctx.step.run('started', () => calls.push('started'))
    const paid = await ctx.step.waitForEvent('paid', 'order.paid', { match: { orderId: ctx.input.orderId }, ...ctx.input.opts })
    calls.push('after')
    return paid
  })
}

const suspendedAt = async (rt: ReturnType<typeof runtime>, id: string) => until(async () => (await rt.getRun(id))?.status === 'suspended')

describe('ctx.step.waitForEvent', () => {
  it('resumes with the event whose data matches, and not for one that does not', async () => {
    const calls: string[] = []
    const rt = runtime([waiting(calls)])
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-1' })
    await suspendedAt(rt, run.id)
    expect((await rt.getRun(run.id))?.suspended?.waitpoint).toMatchObject({ type: 'event', name: 'order.paid', match: { orderId: 'o-1' } })
    expect((await rt.sendEvent('order.paid', { orderId: 'o-2' })).resumed).toEqual([])
    expect((await rt.sendEvent('order.shipped', { orderId: 'o-1' })).resumed).toEqual([])
    const sent = await rt.sendEvent('order.paid', { orderId: 'o-1', total: 5 }, { id: 'evt-1' })
    expect(sent.resumed).toEqual([run.id])
    const done = await finished(rt.waitForRun(run.id))
    expect(done.result).toEqual({
      event: { id: 'evt-1', name: 'order.paid', data: { orderId: 'o-1', total: 5 }, time: expect.any(String) },
    })
    expect(done.steps.paid).toMatchObject({ status: 'completed', kind: 'waitForEvent' })
    // Replayed once after the wait: the step ran once.
    expect(calls).toEqual(['started', 'after'])
  })

  it('times out with { timedOut: true } after timeoutSeconds', async () => {
    const rt = runtime([waiting()])
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-1', opts: { timeoutSeconds: 0.2 } })
    expect((await finished(rt.waitForRun(run.id))).result).toEqual({ timedOut: true })
    // An event after the timeout resumes nothing.
    expect((await rt.sendEvent('order.paid', { orderId: 'o-1' })).resumed).toEqual([])
  })

  it('an event sent before the wait began meets it within lookbackSeconds, and not without', async () => {
    const rt = runtime([waiting()])
    await rt.sendEvent('order.paid', { orderId: 'early' }, { id: 'evt-early' })
    const looking = await rt.trigger('orders.fulfil', { orderId: 'early', opts: { lookbackSeconds: 60 } })
    expect((await finished(rt.waitForRun(looking.id))).result).toMatchObject({ event: { id: 'evt-early' } })
    // Times are to the millisecond, and an event of the millisecond a wait
    // begins in meets it (nothing sent as it begins is lost): this wait
    // begins in a later one.
    await sleep(2)
    const strict = await rt.trigger('orders.fulfil', { orderId: 'early' })
    const settled = await until(async () => {
      const run = await rt.getRun(strict.id)
      return run && run.status !== 'queued' && run.status !== 'running' && run
    })
    expect(settled.status).toBe('suspended')
  })

  it('a wait looking back meets the event it matches however many others of the name came before it', async () => {
    const rt = runtime([waiting()])
    for (let n = 0; n <= 1500; n++) await rt.sendEvent('order.paid', { orderId: `o-${n}` }, { id: `evt-${n}` })
    for (const n of [5, 1000, 1500]) {
      const run = await rt.trigger('orders.fulfil', { orderId: `o-${n}`, opts: { lookbackSeconds: 3600 } })
      expect((await finished(rt.waitForRun(run.id))).result, `o-${n}`).toMatchObject({ event: { id: `evt-${n}` } })
    }
  })

  it('an event sent while the run is suspending is found when its wait is armed', async () => {
    let rt!: ReturnType<typeof runtime>
    // The wait's first look finds nothing, and the event is sent right
    // then, before the run is suspended: the send finds no run waiting.
    rt = runtime([waiting()], {
      store: storeSendingDuringFirstLook(async () => {
        expect((await rt.sendEvent('order.paid', { orderId: 'o-9' }, { id: 'evt-between' })).resumed).toEqual([])
      }),
    })
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-9' })
    expect((await finished(rt.waitForRun(run.id))).result).toMatchObject({ event: { id: 'evt-between' } })
  })

  it('of two matching events sent at once, the run resumes once, with one of them', async () => {
    const calls: string[] = []
    const rt = runtime([waiting(calls)])
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-3' })
    await suspendedAt(rt, run.id)
    const sends = await Promise.all([
      rt.sendEvent('order.paid', { orderId: 'o-3' }, { id: 'a' }),
      rt.sendEvent('order.paid', { orderId: 'o-3' }, { id: 'b' }),
    ])
    expect(sends.flatMap((sent) => sent.resumed)).toEqual([run.id])
    const done = await finished(rt.waitForRun(run.id))
    expect(['a', 'b']).toContain((done.result as { event: { id: string } }).event.id)
    expect(calls).toEqual(['started', 'after'])
  })

  it('its token is not a waitForToken token: completeToken cannot meet the wait', async () => {
    const rt = runtime([waiting()])
    const run = await rt.trigger('orders.fulfil', { orderId: 'o-4' })
    await suspendedAt(rt, run.id)
    expect(await rt.completeToken(eventWaitTokenId(run.id, 'paid'), { forged: true })).toBe('not_found')
    expect((await rt.getRun(run.id))?.status).toBe('suspended')
  })

  it.each([
    [{ match: 'o-1' }, /match must be an object of data paths and values/],
    [{ match: { 'bad path!': 1 } }, /match path "bad path!" must be member names joined by '\.'/],
    [{ match: { a: undefined } }, /match\.a is undefined/],
    [{ timeoutSeconds: 0 }, /timeoutSeconds must be a positive finite number \(got 0\)/],
    [{ lookbackSeconds: 86_401 }, /lookbackSeconds must be a number of seconds from 0 to 86400/],
  ])('refuses bad options (%j), failing the attempt with a message that names them', async (opts, message) => {
    const rt = runtime([task('bad', async (ctx: TaskContext) => ctx.step.waitForEvent('w', 'order.paid', opts as WaitForEventOptions))])
    const run = await rt.trigger('bad', {})
    const done = await finished(rt.waitForRun(run.id))
    expect(done.status).toBe('failed')
    expect(done.attempts.at(-1)?.error).toMatch(message)
  })

  it('refuses a bad event name', async () => {
    const rt = runtime([task('bad', async (ctx: TaskContext) => ctx.step.waitForEvent('w', 'no spaces'))])
    const done = await finished(rt.waitForRun((await rt.trigger('bad', {})).id))
    expect(done.attempts.at(-1)?.error).toMatch(/ctx\.step\.waitForEvent\("w", "no spaces"\): an event name is/)
  })
})
