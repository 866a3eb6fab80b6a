/**
 * Compensation as a task sees it (`ctx.step.run(key, fn, { compensate })`),
 * driven by svcjs/testing on a virtual clock: a run that fails for good
 * undoes its completed steps, last first, each once; an undo that throws is
 * tried again, and one that keeps throwing ends the run
 * `compensation_failed`; a run past its deadline while it waits undoes its
 * steps too; a run with nothing to undo fails as before.
 * compensation.test.ts runs these on memory and SQLite,
 * test/postgres/compensation.test.ts on Postgres.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import type { TaskContext } from '../../src/types.ts'
import { task } from '../testing/_kit.ts'

export function compensationCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`compensation, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    const calls: string[] = []
    let undoFailures = 0
    afterEach(async () => {
      await t.close()
      await store?.close()
      calls.length = 0
      undoFailures = 0
    })
    const booking = async (ctx: TaskContext<{ car?: boolean; wait?: boolean }>) => {
      const flight = await ctx.step.run('flight', () => (calls.push('book flight'), 'F1'), {
        compensate: (id) => void calls.push(`cancel flight ${id}`),
      })
      const hotel = await ctx.step.run('hotel', () => (calls.push('book hotel'), { id: 'H1' }), {
        compensate: (booked) => {
          if (undoFailures-- > 0) throw new Error('the hotel is not answering')
          calls.push(`cancel hotel ${booked.id}`)
          return { refunded: true }
        },
      })
      await ctx.step.run('note', () => void calls.push('note'))
      if (ctx.input.wait) await ctx.step.sleep('pause', 3600)
      await ctx.step.run('car', () => {
        calls.push('book car')
        if (ctx.input.car) throw new Error('no cars left')
      })
      return { flight, hotel }
    }
    const start = async () => {
      store = await makeStore?.()
      const routes = [
        task(
          'trips.book',
          async (ctx) => {
            const result = await booking(ctx)
            if (ctx.input.car) throw new Error('no cars left')
            return result
          },
          { retries: 1, maxDuration: 600 },
        ),
        // Nothing to undo: it only waits.
        task('trips.bare', async (ctx) => ctx.step.sleep('wait', 3600)),
      ]
      t = await createTestRuntime({ routes, ...(store ? { store } : {}) })
    }

    it('undoes the completed steps of a run that failed for good, last first, each once, and the run ends failed', async () => {
      await start()
      const run = await t.trigger('trips.book', { car: true })
      await t.advanceUntilIdle()
      const done = await t.getRun(run.id)
      expect(done).toMatchObject({
        status: 'failed',
        compensation: { reason: 'failed', status: 'completed', error: 'no cars left', failures: 0 },
        steps: {
          'compensate:hotel': { status: 'completed', kind: 'compensation', output: { refunded: true } },
          'compensate:flight': { status: 'completed', kind: 'compensation' },
          flight: { compensable: true },
        },
      })
      expect(done?.steps.note.compensable).toBeUndefined()
      // Two attempts booked once (the second replayed), then the undos, last first.
      expect(calls).toEqual(['book flight', 'book hotel', 'note', 'book car', 'book car', 'cancel hotel H1', 'cancel flight F1'])
      expect(done?.attempts.map((attempt) => attempt.error)).toEqual(['no cars left', 'no cars left'])
    })

    it('tries an undo that throws again, and ends compensation_failed once it kept throwing', async () => {
      await start()
      undoFailures = 1
      const again = await t.trigger('trips.book', { car: true })
      await t.advanceUntilIdle()
      expect(await t.getRun(again.id)).toMatchObject({ status: 'failed', compensation: { status: 'completed', failures: 1 } })
      expect(calls.filter((call) => call.startsWith('cancel'))).toEqual(['cancel hotel H1', 'cancel flight F1'])

      calls.length = 0
      undoFailures = 100
      const stuck = await t.trigger('trips.book', { car: true })
      await t.advanceUntilIdle()
      const done = await t.getRun(stuck.id)
      expect(done).toMatchObject({
        status: 'compensation_failed',
        compensation: { status: 'failed', failures: 3, failed: { step: 'hotel', error: 'the hotel is not answering' } },
      })
      // The flight is not undone while the hotel's undo, which comes first, keeps failing.
      expect(calls.filter((call) => call.startsWith('cancel'))).toEqual([])
      expect(done?.attempts.at(-1)).toMatchObject({ error: 'the hotel is not answering', step: 'compensate:hotel' })
    })

    it('undoes the steps of a run whose deadline passed while it waited, and fails a run with nothing to undo as before', async () => {
      await start()
      const run = await t.trigger('trips.book', { wait: true })
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({
        status: 'failed',
        compensation: { reason: 'failed', status: 'completed', error: expect.stringContaining('deadline') },
      })
      expect(calls).toEqual(['book flight', 'book hotel', 'note', 'cancel hotel H1', 'cancel flight F1'])

      const plain = await t.trigger('trips.book', {})
      await t.advanceUntilIdle()
      expect(await t.getRun(plain.id)).toMatchObject({ status: 'completed', result: { flight: 'F1', hotel: { id: 'H1' } } })
      expect((await t.getRun(plain.id))?.compensation).toBeUndefined()
    })

    it('a cancel with compensate undoes the steps of a waiting run, last first, and the run ends cancelled; one with nothing to undo is cancelled at once', async () => {
      await start()
      const run = await t.trigger('trips.book', { wait: true })
      expect((await t.getRun(run.id))?.status).toBe('suspended')
      const cancelled = await t.cancel(run.id, { compensate: true })
      expect(cancelled.compensation).toMatchObject({ reason: 'cancelled', status: 'running' })
      await t.runUntilIdle()
      const done = await t.getRun(run.id)
      expect(done).toMatchObject({
        status: 'cancelled',
        ok: false,
        compensation: { reason: 'cancelled', status: 'completed', error: `Run "${run.id}" was cancelled` },
        steps: { 'compensate:hotel': { status: 'completed' }, 'compensate:flight': { status: 'completed' } },
      })
      expect(done?.steps.pause).toBeUndefined()
      expect(calls).toEqual(['book flight', 'book hotel', 'note', 'cancel hotel H1', 'cancel flight F1'])
      // Nothing left to fire: its sleep's timer went with the cancel.
      expect(await t.advanceUntilIdle()).toEqual([])
      expect(calls).toHaveLength(5)
      await expect(t.cancel(run.id, { compensate: true })).rejects.toThrow(/already finished \(cancelled\)/)

      const bare = await t.trigger('trips.bare', {})
      const plain = await t.cancel(bare.id, { compensate: true })
      expect(plain).toMatchObject({ status: 'cancelled' })
      expect(plain.compensation).toBeUndefined()
    })
  })
}
