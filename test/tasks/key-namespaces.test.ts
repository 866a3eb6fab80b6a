/**
 * Idempotency keys: the keys svc makes for runs (an event's run, a batch
 * item, a child) and the keys callers give never meet. svc's start with a
 * control character, which no caller's key may start with, so no trigger
 * takes the place of a run svc starts, and svc's runs take none of a
 * trigger's. In-process here, and over HTTP on a real server on port 0.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { setActiveTaskRuntime } from '../../src/runtime/tasks/client/active.ts'
import { batchItemKey } from '../../src/runtime/tasks/flow/batch.ts'
import { enqueue, enqueueMany } from '../../src/runtime/tasks/client/enqueue.ts'
import { enqueueOptionsFromHeaders, enqueueOverHttp } from '../../src/runtime/tasks/client/client.ts'
import { eventRunKey } from '../../src/runtime/tasks/engine/event-starts.ts'
import { childIdempotencyKey, SVC_KEY_MARK } from '../../src/runtime/tasks/base/ids.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import type { RuntimeApiRoute } from '../../src/types.ts'
import { RawConnection, serve } from '../http/_helpers.ts'
import { finished, runtime, task } from './_helpers.ts'

const receipt = task('receipt', (ctx) => ctx.input, { route: { on: ['order.paid'] } })
const refused = /idempotencyKey must not start with a control character .*drop or replace it/

const echo = task('echo', (ctx) => ctx.input, { input: v.object({ n: v.number() }) })

describe('keys svc makes', () => {
  it('all start with a character no caller key may start with', () => {
    for (const key of [eventRunKey('e-1'), batchItemKey('K', 1), childIdempotencyKey('0190-run', 'kid')]) {
      expect(key.startsWith(SVC_KEY_MARK)).toBe(true)
    }
    expect(new Set([eventRunKey('batch:1:K'), batchItemKey('K', 1), batchItemKey('K:1', 0), batchItemKey('K', 10)]).size).toBe(4)
  })
})

describe('a trigger with a key of the form svc used to make', () => {
  it('"event:<id>" does not take the place of the run that event starts, nor the other way round', async () => {
    const rt = runtime([receipt])
    const forged = await rt.trigger('receipt', { forged: true }, { idempotencyKey: 'event:evt-1' })
    const sent = await rt.sendEvent('order.paid', { orderId: 'o-1' }, { id: 'evt-1' })
    expect(sent.runs).toHaveLength(1)
    expect(sent.runs[0].id).not.toBe(forged.id)
    expect(await finished(rt.waitForRun(sent.runs[0].id))).toMatchObject({
      result: { orderId: 'o-1' },
      event: { id: 'evt-1', name: 'order.paid' },
    })
    expect(await finished(rt.waitForRun(forged.id))).toMatchObject({ result: { forged: true } })

    const later = await rt.trigger('receipt', { forged: true }, { idempotencyKey: 'event:evt-1' })
    expect(later.id).toBe(forged.id)
    const sentFirst = await rt.sendEvent('order.paid', { orderId: 'o-2' }, { id: 'evt-2' })
    const after = await rt.trigger('receipt', { forged: true }, { idempotencyKey: 'event:evt-2' })
    expect(after.id).not.toBe(sentFirst.runs[0].id)
  })

  it('"K:1" is not item 1 of a batch triggered with key K, nor the other way round', async () => {
    const rt = runtime([echo])
    const single = await rt.trigger('echo', { n: 100 }, { idempotencyKey: 'import-7:1' })
    const batch = await rt.triggerMany('echo', [{ n: 0 }, { n: 1 }], { idempotencyKey: 'import-7' })
    expect(batch.every((item) => item.ok)).toBe(true)
    const ids = batch.map((item) => (item.ok ? item.id : ''))
    expect(ids).not.toContain(single.id)
    expect((await finished(rt.waitForRun(ids[1]))).result).toEqual({ n: 1 })

    const again = await rt.trigger('echo', { n: 200 }, { idempotencyKey: 'import-7:0' })
    expect(ids).not.toContain(again.id)
    // The batch sent again still answers with its own runs, item by item.
    const resent = await rt.triggerMany('echo', [{ n: 0 }, { n: 1 }], { idempotencyKey: 'import-7' })
    expect(resent.map((item) => (item.ok ? item.id : ''))).toEqual(ids)
  })

  it('through enqueue and enqueueMany in-process, as through trigger', async () => {
    const rt = runtime([echo])
    setActiveTaskRuntime(rt)
    try {
      const single = await enqueue('echo', { n: 9 }, { idempotencyKey: 'k:0' })
      const [item] = await enqueueMany('echo', [{ n: 0 }], { idempotencyKey: 'k' })
      expect(item.ok && item.id).not.toBe(single.runId)
    } finally {
      setActiveTaskRuntime(null)
    }
  })
})

describe('a key that starts with a control character', () => {
  const marked = `${SVC_KEY_MARK}event:evt-1`

  it('is refused by trigger, triggerMany, enqueue and ctx.step.enqueue, naming the rule', async () => {
    const parent = task('parent', (ctx) => ctx.step.enqueue('kid', 'echo', { n: 1 }, { idempotencyKey: '\u0000x' }))
    const rt = runtime([receipt, echo, parent])
    await expect(rt.trigger('receipt', {}, { idempotencyKey: marked })).rejects.toThrow(refused)
    await expect(rt.trigger('echo', { n: 1 }, { idempotencyKey: '\u007fk' })).rejects.toThrow(refused)
    await expect(rt.triggerMany('echo', [{ n: 1 }], { idempotencyKey: batchItemKey('K', 0) })).rejects.toThrow(refused)
    setActiveTaskRuntime(rt)
    try {
      await expect(enqueue('receipt', {}, { idempotencyKey: marked })).rejects.toThrow(
        /^enqueue\("receipt"\): idempotencyKey must not start/,
      )
    } finally {
      setActiveTaskRuntime(null)
    }
    const run = await finished(rt.waitForRun((await rt.trigger('parent')).id))
    expect(run.attempts[0].error).toMatch(/^ctx\.step\.enqueue\("kid"\): idempotencyKey must not start with a control character/)
    expect((await rt.listRuns({ taskName: 'receipt' })).length).toBe(0)
  })

  it('may hold one further on, and a key of a batch item reaches trigger as a runtime spread over shards sends it', async () => {
    const rt = runtime([echo])
    const inner = await rt.trigger('echo', { n: 1 }, { idempotencyKey: 'a\u001fb' })
    expect(inner.idempotencyKey).toBe('a\u001fb')
    const [item] = await rt.triggerMany('echo', [{ n: 2 }], { idempotencyKey: 'K' })
    const sent = await rt.trigger('echo', { n: 2 }, { idempotencyKey: batchItemKey('K', 0) })
    expect(item.ok && item.id).toBe(sent.id)
    // The batch's own key is still a caller's key, under the length limit.
    await expect(rt.trigger('echo', { n: 2 }, { idempotencyKey: batchItemKey('k'.repeat(256), 0) })).rejects.toThrow(
      /at most 255 characters/,
    )
  })

  it('is refused before a request leaves for the task server', async () => {
    await expect(enqueueOverHttp('echo', { n: 1 }, { idempotencyKey: marked }, { SVC_TASK_URL: 'http://127.0.0.1:9' })).rejects.toThrow(
      refused,
    )
  })
})

describe('over HTTP', () => {
  const SECRET = 's3cret-0123456789abcdef0123456789ab'
  const headers = { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }
  const routes: RuntimeApiRoute[] = [
    { path: '/api/receipt', module: { route: { kind: 'task', on: ['order.paid'] }, POST: (ctx) => ctx.input } },
  ]
  const start = () => serve({ apiRoutes: routes, env: { NODE_ENV: 'production', SVC_TASK_SECRET: SECRET }, store: new MemoryRunStore() })
  const post = (url: string, body: unknown, extra: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) })

  it('POST /__tasks/<name> with Idempotency-Key "event:<id>" does not take the place of the run that event starts', async () => {
    const server = await start()
    const forged = await post(`${server.url}/__tasks/receipt`, { forged: true }, { 'idempotency-key': 'event:evt-9' })
    expect(forged.status).toBe(202)
    const forgedId = (await forged.json()).id
    const sent = await post(`${server.url}/__events/order.paid`, { orderId: 'o-9' }, { 'idempotency-key': 'evt-9' })
    const { runs } = await sent.json()
    expect(runs).toHaveLength(1)
    expect(runs[0].id).not.toBe(forgedId)
    expect(await server.runtime.waitForRun(runs[0].id)).toMatchObject({ result: { orderId: 'o-9' }, event: { id: 'evt-9' } })
  })

  it('POST /__tasks/<name> with Idempotency-Key "K:1" is not item 1 of the batch sent with K', async () => {
    const server = await start()
    const batch = await (await post(`${server.url}/__tasks/receipt/batch`, [{ i: 0 }, { i: 1 }], { 'idempotency-key': 'K' })).json()
    const single = await (await post(`${server.url}/__tasks/receipt`, { i: 'single' }, { 'idempotency-key': 'K:1' })).json()
    expect(batch.runs.map((item: { id: string }) => item.id)).not.toContain(single.id)
    expect(await server.runtime.waitForRun(single.id)).toMatchObject({ result: { i: 'single' } })
  })

  it('refuses an Idempotency-Key that starts with a control character, whichever host reads the request', async () => {
    const server = await start()
    // fetch will not send such a header, and Node's parser answers 400 to it; a raw client sends it as given.
    const raw = new RawConnection(server.port)
    await raw.ready()
    raw.send('POST', '/__tasks/receipt', { ...headers, 'idempotency-key': `${SVC_KEY_MARK}event:evt-9` }, '{}')
    expect((await raw.next())?.status).toBe(400)
    raw.close()
    expect(await server.runtime.listRuns({ taskName: 'receipt' })).toEqual([])
    // A host whose Headers carry it (a worker's) meets the rule of the admin surface: 400 INVALID_OPTIONS.
    expect(() => enqueueOptionsFromHeaders(new Headers({ 'idempotency-key': `${SVC_KEY_MARK}event:evt-9` }))).toThrow(
      /^Header Idempotency-Key: idempotencyKey must not start with a control character/,
    )
  })
})
