/**
 * Updates as a task sees them (`ctx.onUpdate`, `updateRun`), driven by
 * svcjs/testing on a virtual clock: a run waiting on a signal or asleep
 * answers and waits on where it was; its handlers are given the updates
 * they answered again when it replays; bad data, a handler that throws, a
 * name with no handler, an unknown or finished run and a full run are
 * refused, each without touching the run; an id sent again gets the one
 * answer. updates.test.ts runs these on memory and SQLite,
 * test/postgres/updates.test.ts on Postgres.
 */
import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import { MAX_PENDING_UPDATES } from '../../src/runtime/tasks/store/update-records.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import { RunFinishedError, RunNotFoundError, ValidationError } from '../../src/runtime/errors.ts'
import { TooManyUpdatesError, UpdateFailedError, UpdateNotHandledError } from '../../src/runtime/update-errors.ts'
import { task } from '../testing/_kit.ts'

export function updateCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`updates, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    /** How many times each handler ran, replays included. */
    const calls: string[] = []
    afterEach(async () => {
      await t.close()
      await store?.close()
      calls.length = 0
    })
    const start = async () => {
      store = await makeStore?.()
      const routes = [
        // A cart that takes items until checkout.
        task('shop.cart', async (ctx) => {
          const items: string[] = []
          ctx.onUpdate('add', {
            input: v.object({ item: v.pipe(v.string(), v.minLength(1)) }),
            handler: ({ item }) => {
              calls.push(`add:${item}`)
              if (item === 'bomb') throw new Error('no bombs in carts')
              items.push(item)
              return { count: items.length }
            },
          })
          ctx.onUpdate('peek', { handler: () => [...items] })
          const paid = await ctx.step.waitForSignal('checkout', 'checkout')
          await ctx.step.run('charge', () => items.length)
          return { items, paid: (paid as { data?: unknown }).data }
        }),
        // Sleeps an hour; tells how long it has slept on the way.
        task('nap.long', async (ctx) => {
          ctx.onUpdate('status', { handler: () => 'napping' })
          await ctx.step.sleep('nap', 3600)
          return 'rested'
        }),
        // Declares nothing.
        task('plain.wait', async (ctx) => {
          await ctx.step.waitForSignal('go', 'go')
          return 'gone'
        }),
      ]
      t = await createTestRuntime({ routes, ...(store ? { store } : {}) })
    }

    it('answers a run that waits, which waits on where it was; a replay gives the handler its updates again', async () => {
      await start()
      const run = await t.trigger('shop.cart', {})
      expect(await t.updateRun(run.id, 'add', { item: 'apple' })).toEqual({ count: 1 })
      expect(await t.updateRun(run.id, 'add', { item: 'pear' })).toEqual({ count: 2 })
      // The second invocation was given 'apple' again before it answered 'pear'.
      expect(await t.updateRun(run.id, 'peek')).toEqual(['apple', 'pear'])
      expect((await t.waitingOn(run.id))?.kind).toBe('signal')
      await t.sendSignal(run.id, 'checkout', 'card')
      const done = await t.getRun(run.id)
      expect(done?.status).toBe('completed')
      expect(done?.result).toEqual({ items: ['apple', 'pear'], paid: 'card' })
      expect(done?.steps?.charge?.output).toBe(2)
      const kept = await t.runtime.listUpdates(run.id)
      expect(kept.map((u) => [u.name, u.status, u.result])).toEqual([
        ['add', 'completed', { count: 1 }],
        ['add', 'completed', { count: 2 }],
        ['peek', 'completed', ['apple', 'pear']],
      ])
    })

    it('refuses bad data, and a name with no handler, without touching the run; a handler that throws fails the update only', async () => {
      await start()
      const run = await t.trigger('shop.cart', {})
      const bad: any = await t.updateRun(run.id, 'add', { item: '' }).catch((error: any) => error)
      expect(bad).toBeInstanceOf(ValidationError)
      expect(bad.status).toBe(400)
      expect(bad.details[0].path).toEqual(['item'])
      const thrown: any = await t.updateRun(run.id, 'add', { item: 'bomb' }).catch((error: any) => error)
      expect(thrown).toBeInstanceOf(UpdateFailedError)
      expect(thrown.message).toMatch(/no bombs in carts/)
      const unknown: any = await t.updateRun(run.id, 'remove', { item: 'x' }).catch((error: any) => error)
      expect(unknown).toBeInstanceOf(UpdateNotHandledError)
      expect(unknown.message).toMatch(/declares "add", "peek"/)
      expect(await t.updateRun(run.id, 'peek')).toEqual([])
      await t.sendSignal(run.id, 'checkout')
      expect((await t.getRun(run.id))?.result).toEqual({ items: [] })
      // The bad data never reached the handler.
      expect(calls.filter((call) => call === 'add:')).toEqual([])
    })

    it('a run that declares no handler refuses the update, and still waits', async () => {
      await start()
      const run = await t.trigger('plain.wait', {})
      const error: any = await t.updateRun(run.id, 'anything').catch((e: any) => e)
      expect(error).toBeInstanceOf(UpdateNotHandledError)
      expect(error.message).toMatch(/declares none/)
      expect((await t.waitingOn(run.id))?.kind).toBe('signal')
      await t.sendSignal(run.id, 'go')
      expect((await t.getRun(run.id))?.status).toBe('completed')
    })

    it('a sleep woken for an update still ends when it would have', async () => {
      await start()
      const run = await t.trigger('nap.long', {})
      await t.advance('30m')
      expect(await t.updateRun(run.id, 'status')).toBe('napping')
      expect((await t.getRun(run.id))?.status).toBe('suspended')
      await t.advance('29m')
      expect((await t.getRun(run.id))?.status).toBe('suspended')
      await t.advance('2m')
      expect((await t.getRun(run.id))?.status).toBe('completed')
    })

    it('an id sent again gets the one answer, and the handler runs once', async () => {
      await start()
      const run = await t.trigger('shop.cart', {})
      expect(await t.updateRun(run.id, 'add', { item: 'fig' }, { id: 'u-1' })).toEqual({ count: 1 })
      expect(await t.updateRun(run.id, 'add', { item: 'plum' }, { id: 'u-1' })).toEqual({ count: 1 })
      expect(calls.filter((call) => call.startsWith('add:')).length).toBeLessThanOrEqual(2)
      expect(await t.updateRun(run.id, 'peek')).toEqual(['fig'])
      // A finished run still answers an id it answered.
      await t.sendSignal(run.id, 'checkout')
      expect(await t.updateRun(run.id, 'add', { item: 'fig' }, { id: 'u-1' })).toEqual({ count: 1 })
      await expect(t.updateRun(run.id, 'add', { item: 'kiwi' })).rejects.toBeInstanceOf(RunFinishedError)
    })

    it('refuses an unknown run, bad names and options, and a run holding as many unanswered updates as it may', async () => {
      await start()
      await expect(t.updateRun('no-such-run', 'add')).rejects.toBeInstanceOf(RunNotFoundError)
      const run = await t.trigger('shop.cart', {})
      await expect(t.updateRun(run.id, 'bad name!')).rejects.toThrow(/an update name is 1 to 128/)
      await expect(t.updateRun(run.id, 'add', {}, { timeoutSeconds: 0 })).rejects.toThrow(/timeoutSeconds must be/)
      const kept = t.runtime.store
      for (let i = 0; i < MAX_PENDING_UPDATES; i++) {
        await kept.putUpdate!(
          { id: `held-${i}`, runId: run.id, name: 'held', sentAt: new Date().toISOString(), status: 'pending' },
          MAX_PENDING_UPDATES,
        )
      }
      await expect(t.updateRun(run.id, 'add', { item: 'one too many' })).rejects.toBeInstanceOf(TooManyUpdatesError)
    })
  })
}
