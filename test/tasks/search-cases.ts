/**
 * Tags and metadata as a task sees them, and runs found by them
 * (`EnqueueOptions.tags`, `ctx.metadata`, `RunQuery`): started with tags
 * from a trigger and from `ctx.step.enqueue`, kept on a replay; metadata
 * set across a sleep and found while the run sleeps; each mistake refused
 * with its fix named. Driven by svcjs/testing; search.test.ts runs these on
 * memory and SQLite, test/postgres/search.test.ts on Postgres.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import { task } from '../testing/_kit.ts'

const routes = [
  task('orders.ship', async (ctx) => {
    await ctx.metadata.set('stage', 'packing')
    await ctx.step.run('pack', () => 'packed')
    await ctx.step.sleep('courier', 3600)
    expect(ctx.metadata.get('stage')).toBe('packing')
    await ctx.metadata.set('stage', 'shipped')
    await ctx.metadata.set('parcels', 2)
    await ctx.metadata.delete('missing')
    await ctx.step.enqueue('notify', 'orders.notify', { order: ctx.input.order }, { tags: ['kind:notice', ...(ctx.input.tags ?? [])] })
    return ctx.metadata.current()
  }),
  task('orders.notify', () => 'sent'),
  task('orders.bad', async (ctx) => {
    if (ctx.input.what === 'big') await ctx.metadata.set('blob', 'x'.repeat(5000))
    if (ctx.input.what === 'key') await ctx.metadata.set('', 1)
    if (ctx.input.what === 'json') await ctx.metadata.set('f', () => 1)
    return 'unreached'
  }),
]

export function searchCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`tags and metadata, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    afterEach(async () => {
      await t.close()
      await store?.close()
    })
    const start = async () => {
      store = await makeStore?.()
      t = await createTestRuntime({ routes, ...(store ? { store } : {}) })
    }

    it('keeps tags from a trigger and from step.enqueue, and metadata the run sets across a sleep, and finds runs by both', async () => {
      await start()
      const acme = await t.trigger('orders.ship', { order: 1, tags: ['x:1'] }, { tags: ['tenant:acme', 'tenant:acme', 'plan:pro'] })
      const other = await t.trigger('orders.ship', { order: 2 }, { tags: ['tenant:other'] })
      await t.runUntilIdle()
      expect((await t.getRun(acme.id))?.tags).toEqual(['tenant:acme', 'plan:pro'])
      // Asleep: its metadata is stored and found.
      expect((await t.runs({ metadata: { stage: 'packing' } })).map((run) => run.id)).toEqual([other.id, acme.id])
      expect((await t.runs({ tags: ['tenant:acme'], metadata: { stage: 'packing' }, status: 'suspended' })).map((run) => run.id)).toEqual([
        acme.id,
      ])
      await t.advance('1h')
      await t.advanceUntilIdle()
      const done = await t.getRun(acme.id)
      expect(done).toMatchObject({
        status: 'completed',
        metadata: { stage: 'shipped', parcels: 2 },
        result: { stage: 'shipped', parcels: 2 },
      })
      expect((await t.runs({ metadata: { stage: 'shipped', parcels: '2' } })).map((run) => run.id)).toEqual([other.id, acme.id])
      expect(await t.runs({ metadata: { stage: 'packing' } })).toEqual([])
      const notices = await t.runs({ task: 'orders.notify', tags: ['kind:notice'] })
      expect(notices.map((run) => run.tags)).toEqual([['kind:notice'], ['kind:notice', 'x:1']])
      expect((await t.runs({ tags: ['x:1'] })).map((run) => run.parentRunId)).toEqual([acme.id])
      // A replay keeps the tags, and starts with no metadata of its own.
      const again = await t.replay(acme.id)
      expect(again.tags).toEqual(['tenant:acme', 'plan:pro'])
      expect((await t.runs({ tags: ['tenant:acme', 'plan:pro'] })).map((run) => run.id)).toEqual([again.id, acme.id])
    })

    it('refuses bad tags before any run starts, and fails the attempt that sets bad metadata, naming the fix', async () => {
      await start()
      await expect(t.trigger('orders.notify', {}, { tags: ['has space'] })).rejects.toThrow(
        /tags: a tag must be 1 to 64 printable ASCII characters with no space or comma/,
      )
      await expect(t.trigger('orders.notify', {}, { tags: 'tenant:acme' as never })).rejects.toThrow(/tags must be an array of strings/)
      await expect(t.trigger('orders.notify', {}, { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).rejects.toThrow(
        /at most 10 tags/,
      )
      expect(await t.runs()).toEqual([])
      const big = await t.run('orders.bad', { what: 'big' }, { tags: ['ok'] })
      expect(big.attempts.at(-1)?.error).toMatch(/metadata would be 5,\d{3} bytes of JSON, over the 4,096-byte limit/)
      const key = await t.run('orders.bad', { what: 'key' })
      expect(key.attempts.at(-1)?.error).toMatch(/a metadata key must be a string of 1 to 64 characters/)
      const json = await t.run('orders.bad', { what: 'json' })
      expect(json.attempts.at(-1)?.error).toMatch(/the value must be a JSON value/)
      expect(big.metadata).toBeUndefined()
    })
  })
}
