/**
 * Cancellation that reaches children (`TaskRuntime.cancel`): a run
 * cancelled while it waits on a child run takes the child with it, and the
 * child's own, down the chain; `children: 'all'` takes the runs it
 * enqueued too; `children: 'none'` leaves them; a child
 * cancelled from outside resumes its parent with the cancellation, which
 * the parent handles. Driven by svcjs/testing, so the sleeps take no time;
 * cancel-children.test.ts runs these on memory and SQLite,
 * test/postgres/cancel-children.test.ts on Postgres.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import { task } from '../testing/_kit.ts'

/** A parent that waits on a child that waits on a grandchild that sleeps a day; and a task it starts without waiting. */
const ROUTES = [
  task('parent', async (ctx) => {
    await ctx.step.enqueue('side', 'side', {})
    return ctx.step.waitForTask('child', 'child', {})
  }),
  task('child', (ctx) => ctx.step.waitForTask('grandchild', 'grandchild', {})),
  task('grandchild', (ctx) => ctx.step.sleep('a-day', 86_400)),
  task('side', async (ctx) => {
    await ctx.step.enqueue('leaf', 'leaf', {})
    await ctx.step.sleep('a-day', 86_400)
  }),
  task('leaf', (ctx) => ctx.step.sleep('a-day', 86_400)),
  // Handles the cancellation of the child it waits on.
  task('tolerant', async (ctx) => {
    const result = await ctx.step.waitForTask('child', 'grandchild', {})
    return { handled: result }
  }),
]

/** The cases, each on a store `makeStore` makes for it (none: the kit's memory store), closed after it. */
export function cancelChildrenCases(
  name: string,
  makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>,
): void {
  describe(`cancel, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    afterEach(async () => {
      await t.close()
      await store?.close()
    })
    const start = async () => {
      store = await makeStore?.()
      t = await createTestRuntime({ routes: ROUTES, ...(store ? { store } : {}) })
    }

    /** The runs of `task`, each by status. */
    const statuses = async (task: string) => (await t.runs({ task })).map((run) => run.status)

    it('cancels the child the run waits on, and the grandchild that one waits on; not a run it started without waiting', async () => {
      await start()
      const parent = await t.trigger('parent')
      const [child] = await t.runs({ task: 'child' })
      const [grandchild] = await t.runs({ task: 'grandchild' })
      expect([parent.status, child.status, grandchild.status]).toEqual(['suspended', 'suspended', 'suspended'])

      const cancelled = await t.cancel(parent.id)
      expect(cancelled).toMatchObject({ id: parent.id, status: 'cancelled', cancelledWith: [child.id, grandchild.id] })
      expect(await statuses('child')).toEqual(['cancelled'])
      expect(await statuses('grandchild')).toEqual(['cancelled'])
      // Started with step.enqueue, not waited on: it goes on.
      expect(await statuses('side')).toEqual(['suspended'])
      await t.advanceUntilIdle()
      expect(await statuses('side')).toEqual(['completed'])
      expect(await statuses('parent')).toEqual(['cancelled'])
    })

    it("children: 'none' cancels the run alone", async () => {
      await start()
      const parent = await t.trigger('parent')
      expect(await t.cancel(parent.id, { children: 'none' })).toMatchObject({ status: 'cancelled', cancelledWith: [] })
      await t.advanceUntilIdle()
      // The chain below finished on its own; the cancelled parent was not resumed by it.
      expect(await statuses('child')).toEqual(['completed'])
      expect(await statuses('parent')).toEqual(['cancelled'])
    })

    it('a child cancelled from outside resumes its parent with the cancellation, which the parent handles', async () => {
      await start()
      const parent = await t.trigger('tolerant')
      const [child] = await t.runs({ task: 'grandchild' })
      expect(await t.cancel(child.id)).toMatchObject({ cancelledWith: [] })
      const done = await t.getRun(parent.id)
      expect(done).toMatchObject({ status: 'completed', result: { handled: { ok: false, cancelled: true } } })
    })

    it("children: 'all' cancels the runs it enqueued too, and theirs, at every level, in the order they were started", async () => {
      await start()
      const parent = await t.trigger('parent')
      const [child, grandchild, side, leaf] = await Promise.all(
        ['child', 'grandchild', 'side', 'leaf'].map(async (task) => (await t.runs({ task }))[0]),
      )
      expect(await t.cancel(parent.id, { children: 'all' })).toMatchObject({
        status: 'cancelled',
        cancelledWith: [child.id, grandchild.id, side.id, leaf.id],
      })
      for (const task of ['child', 'grandchild', 'side', 'leaf']) expect(await statuses(task)).toEqual(['cancelled'])
      await t.advanceUntilIdle()
      expect(await statuses('leaf')).toEqual(['cancelled'])
    })

    it("children: 'all' leaves a child that finished as it ended", async () => {
      await start()
      const side = await t.trigger('side')
      const [leaf] = await t.runs({ task: 'leaf' })
      await t.cancel(leaf.id)
      expect(await t.cancel(side.id, { children: 'all' })).toMatchObject({ status: 'cancelled', cancelledWith: [] })
      expect(t.logs.filter((entry) => entry.level === 'error')).toEqual([])
    })

    it('refuses a children option it does not know, naming the three it takes', async () => {
      await start()
      const parent = await t.trigger('parent')
      await expect(t.cancel(parent.id, { children: 'every' as never })).rejects.toThrow(
        `cancel(id, { children }): children must be 'waited' (the child runs it waits on, and theirs), 'all' (those and the runs its ctx.step.enqueue started) or 'none' (got "every")`,
      )
      expect((await t.getRun(parent.id))?.status).toBe('suspended')
    })
  })
}
