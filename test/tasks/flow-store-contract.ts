/**
 * The flow-control part of the RunStore contract (`startQueued`,
 * `debounceRun`): every store that holds tasks with `route.concurrency`,
 * `route.rateLimit` or `route.debounce` runs it.
 */
import { describe, expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import { planStarts } from '../../src/runtime/tasks/flow/flow.ts'
import type { RunRecord } from '../../src/types.ts'
import { makeRun } from './store-contract.ts'

export function flowStoreContract(name: string, createStore: () => RunStore | Promise<RunStore>): void {
  describe(`RunStore flow control: ${name}`, () => {
    const now = '2025-01-01T00:10:00.000Z'

    it('startQueued starts queued runs in creation order while running ones leave a slot', async () => {
      const store = await createStore()
      const running = await store.createRun(makeRun({ startedAt: now }))
      const queued = [makeRun({ status: 'queued' }), makeRun({ status: 'queued' }), makeRun({ status: 'queued' })]
      for (const run of queued) await store.createRun(run)
      await store.createRun(makeRun({ status: 'queued', taskName: 'other' }))
      const first = await store.startQueued('report', { concurrency: { limit: 2 } }, now)
      expect(first.started.map((run) => run.id)).toEqual([queued[0].id])
      expect(first.started[0]).toMatchObject({ status: 'running', startedAt: now })
      expect(first.wake).toBeUndefined()
      expect((await store.getRun(queued[0].id))?.status).toBe('running')
      expect((await store.getRun(queued[1].id))?.status).toBe('queued')
      expect((await store.startQueued('report', { concurrency: { limit: 2 } }, now)).started).toEqual([])
      await store.updateRun(running.id, { status: 'completed' })
      const second = await store.startQueued('report', { concurrency: { limit: 2 } }, now)
      expect(second.started.map((run) => run.id)).toEqual([queued[1].id])
    })

    it('startQueued starts higher priorities first, in creation order within one priority, and keeps the priority', async () => {
      const store = await createStore()
      const runs = [
        makeRun({ status: 'queued' }),
        makeRun({ status: 'queued', priority: -5 }),
        makeRun({ status: 'queued', priority: 10 }),
        makeRun({ status: 'queued' }),
        makeRun({ status: 'queued', priority: 10 }),
      ]
      for (const run of runs) await store.createRun(run)
      const order: string[] = []
      for (let i = 0; i < runs.length; i++) {
        const { started } = await store.startQueued('report', { concurrency: { limit: 1 } }, now)
        expect(started).toHaveLength(1)
        order.push(started[0].id)
        await store.updateRun(started[0].id, { status: 'completed' })
      }
      expect(order).toEqual([runs[2].id, runs[4].id, runs[0].id, runs[3].id, runs[1].id])
      expect((await store.getRun(runs[2].id))?.priority).toBe(10)
      expect((await store.getRun(runs[1].id))?.priority).toBe(-5)
    })

    it('startQueued starts an old low-priority run before a newer high-priority one once its wait outweighs the gap, unless priorityAging is false', async () => {
      const store = await createStore()
      const ago = (seconds: number) => new Date(Date.parse(now) - seconds * 1000).toISOString()
      const startOrder = async (taskName: string, priorityAging?: false) => {
        // At the default point a second, priority 10 is worth 10 s of waiting.
        const runs = [
          makeRun({ taskName, status: 'queued', createdAt: ago(60) }),
          makeRun({ taskName, status: 'queued', priority: 10, createdAt: ago(55) }),
          makeRun({ taskName, status: 'queued', priority: 10, createdAt: ago(45) }),
        ]
        for (const run of runs) await store.createRun(run)
        const limits = priorityAging === undefined ? { concurrency: { limit: 1 } } : { concurrency: { limit: 1 }, priorityAging }
        const order: number[] = []
        for (let i = 0; i < runs.length; i++) {
          const { started } = await store.startQueued(taskName, limits, now)
          expect(started).toHaveLength(1)
          order.push(runs.findIndex((run) => run.id === started[0].id))
          await store.updateRun(started[0].id, { status: 'completed' })
        }
        return order
      }
      expect(await startOrder('aged')).toEqual([1, 0, 2])
      expect(await startOrder('strict', false)).toEqual([1, 2, 0])
    })

    it('startQueued starts, one at a time, the runs planStarts chooses over the whole queue, with aging and without', async () => {
      const store = await createStore()
      // Random priorities and ages, some delayed past their creation: the order of weights is nowhere near creation order.
      let seed = 7
      const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647
      const ago = (seconds: number) => new Date(Date.parse(now) - seconds * 1000).toISOString()
      for (const [taskName, priorityAging] of [
        ['weighed', 0.5],
        ['strict', false],
      ] as const) {
        const runs: RunRecord[] = []
        for (let i = 0; i < 60; i++) {
          const created = 600 - i * 5
          const run = makeRun({ taskName, status: 'queued', createdAt: ago(created), priority: Math.floor(random() * 40) - 20 })
          if (random() < 0.3) run.runAt = ago(created * random())
          runs.push(await store.createRun(run))
        }
        const limits = { concurrency: { limit: 1 }, priorityAging }
        const expected = [...runs]
        for (let i = 0; i < 20; i++) {
          const [next] = planStarts(limits, expected, [], [], Date.parse(now)).start
          const { started } = await store.startQueued(taskName, limits, now)
          expect(
            started.map((run) => run.id),
            `start ${i} of ${taskName}`,
          ).toEqual([next.id])
          expected.splice(expected.indexOf(next), 1)
          await store.updateRun(next.id, { status: 'completed' })
        }
      }
    })

    it('a delayed run ages from when it was due, not from its creation', async () => {
      const store = await createStore()
      const ago = (seconds: number) => new Date(Date.parse(now) - seconds * 1000).toISOString()
      // Weights at one point a second: 30, 10 + 25 and 10 + 1.
      const runs = [
        makeRun({ status: 'queued', createdAt: ago(3600), runAt: ago(30) }),
        makeRun({ status: 'queued', priority: 10, createdAt: ago(25) }),
        makeRun({ status: 'queued', priority: 10, createdAt: ago(1) }),
      ]
      for (const run of runs) await store.createRun(run)
      const order: string[] = []
      for (let i = 0; i < runs.length; i++) {
        const { started } = await store.startQueued('report', { concurrency: { limit: 1 }, priorityAging: 1 }, now)
        order.push(started[0].id)
        await store.updateRun(started[0].id, { status: 'completed' })
      }
      expect(order).toEqual([runs[1].id, runs[0].id, runs[2].id])
    })

    it('a higher priority in one bucket does not hold back another bucket', async () => {
      const store = await createStore()
      await store.createRun(makeRun({ status: 'running', startedAt: now, input: { user: 'a' } }))
      // Created together, so that no run's wait outweighs a priority.
      const runs = [
        makeRun({ status: 'queued', input: { user: 'a' }, priority: 100, createdAt: now }),
        makeRun({ status: 'queued', input: { user: 'b' }, createdAt: now }),
        makeRun({ status: 'queued', input: { user: 'b' }, priority: 1, createdAt: now }),
      ]
      for (const run of runs) await store.createRun(run)
      const { started } = await store.startQueued('report', { concurrency: { limit: 1, key: 'input.user' } }, now)
      expect(started.map((run) => run.id)).toEqual([runs[2].id])
    })

    it('with perKey, keys take turns under the cap on all: a key with 200 queued holds back one with 10 by no more than its share', async () => {
      const store = await createStore()
      const queued = [
        ...Array.from({ length: 200 }, () => makeRun({ status: 'queued', input: { tenant: 'big' } })),
        ...Array.from({ length: 10 }, () => makeRun({ status: 'queued', input: { tenant: 'small' } })),
      ]
      if (store.createRuns) await store.createRuns(queued)
      else for (const run of queued) await store.createRun(run)
      const limits = { concurrency: { limit: 4, key: 'input.tenant', perKey: 3 } }
      const order: string[] = []
      const running: RunRecord[] = []
      for (;;) {
        const { started } = await store.startQueued('report', limits, now)
        // Never more than 4 at once, nor 3 of one tenant.
        running.push(...started)
        expect(running.length).toBeLessThanOrEqual(4)
        for (const tenant of ['big', 'small']) {
          expect(running.filter((run) => (run.input as { tenant: string }).tenant === tenant).length).toBeLessThanOrEqual(3)
        }
        order.push(...started.map((run) => (run.input as { tenant: string }).tenant))
        const done = running.shift()
        if (!done) break
        await store.updateRun(done.id, { status: 'completed' })
      }
      expect(order).toHaveLength(210)
      // The two take turns from the first start; every small run starts within the first 10% of the big one's.
      expect(order.slice(0, 4)).toEqual(['big', 'small', 'big', 'small'])
      expect(order.slice(0, order.lastIndexOf('small')).filter((tenant) => tenant === 'big').length).toBeLessThanOrEqual(20)
    })

    it('startQueued keeps one bucket per key value, and one shared bucket for runs without a value', async () => {
      const store = await createStore()
      const runs = [
        makeRun({ status: 'queued', input: { user: 'a' } }),
        makeRun({ status: 'queued', input: { user: 'a' } }),
        makeRun({ status: 'queued', input: { user: 'b' } }),
        makeRun({ status: 'queued', input: {} }),
        makeRun({ status: 'queued', input: { user: null } }),
      ]
      for (const run of runs) await store.createRun(run)
      const { started } = await store.startQueued('report', { concurrency: { limit: 1, key: 'input.user' } }, now)
      expect(started.map((run) => run.id)).toEqual([runs[0].id, runs[2].id, runs[3].id])
    })

    it('a key value that is an object is one bucket whatever the order of its keys (nested ones too; arrays keep their order)', async () => {
      const store = await createStore()
      const runs = [
        makeRun({ status: 'queued', input: { who: { org: 'o', id: 1, tags: ['a', 'b'], more: { bb: 1, a: 2 } } } }),
        makeRun({ status: 'queued', input: { who: { more: { a: 2, bb: 1 }, tags: ['a', 'b'], id: 1, org: 'o' } } }),
        makeRun({ status: 'queued', input: { who: { org: 'o', id: 1, tags: ['b', 'a'], more: { bb: 1, a: 2 } } } }),
      ]
      for (const run of runs) await store.createRun(run)
      const { started } = await store.startQueued('report', { concurrency: { limit: 1, key: 'input.who' } }, now)
      expect(started.map((run) => run.id)).toEqual([runs[0].id, runs[2].id])
    })

    it('a resumed run keeps its first start time', async () => {
      const store = await createStore()
      const earlier = '2025-01-01T00:00:00.000Z'
      const run = await store.createRun(makeRun({ status: 'queued', startedAt: earlier }))
      const { started } = await store.startQueued('report', { concurrency: { limit: 1 } }, now)
      expect(started).toEqual([{ ...run, status: 'running', startedAt: earlier }])
    })

    it('startQueued starts at most limit runs per window and says when the window frees a place', async () => {
      const store = await createStore()
      const at = (seconds: number) => new Date(Date.parse(now) + seconds * 1000).toISOString()
      // Started 50 s and 20 s before now, in a 60 s window: one place left.
      await store.createRun(makeRun({ status: 'completed', startedAt: at(-50) }))
      await store.createRun(makeRun({ status: 'completed', startedAt: at(-20) }))
      await store.createRun(makeRun({ status: 'completed', startedAt: at(-70) }))
      const queued = [makeRun({ status: 'queued' }), makeRun({ status: 'queued' })]
      for (const run of queued) await store.createRun(run)
      const limits = { rateLimit: { limit: 3, periodSeconds: 60 } }
      const first = await store.startQueued('report', limits, now)
      expect(first.started.map((run) => run.id)).toEqual([queued[0].id])
      expect(first.wake).toEqual({ at: at(10), runId: queued[1].id })
      expect((await store.startQueued('report', limits, at(9))).started).toEqual([])
      expect((await store.startQueued('report', limits, at(10))).started.map((run) => run.id)).toEqual([queued[1].id])
    })

    it('callers racing on startQueued never start more than the limit', async () => {
      const store = await createStore()
      for (let i = 0; i < 6; i++) await store.createRun(makeRun({ status: 'queued' }))
      const results = await Promise.all(Array.from({ length: 5 }, () => store.startQueued('report', { concurrency: { limit: 2 } }, now)))
      expect(results.flatMap((result) => result.started)).toHaveLength(2)
      expect(await store.listRuns({ status: 'running' })).toHaveLength(2)
    })

    it('debounceRun joins a scheduled run with the same key, taking the new input and start time', async () => {
      const store = await createStore()
      const first = makeRun({ status: 'scheduled', runAt: now, input: { user: 'a', n: 1 } })
      expect((await store.debounceRun(first, 'input.user')).id).toBe(first.id)
      const later = '2025-01-01T00:11:00.000Z'
      const joined = await store.debounceRun(makeRun({ status: 'scheduled', runAt: later, input: { user: 'a', n: 2 } }), 'input.user')
      expect(joined).toMatchObject({ id: first.id, status: 'scheduled', runAt: later, input: { user: 'a', n: 2 } })
      expect(await store.getRun(first.id)).toMatchObject({ runAt: later, input: { user: 'a', n: 2 } })
      const other = makeRun({ status: 'scheduled', runAt: later, input: { user: 'b' } })
      expect((await store.debounceRun(other, 'input.user')).id).toBe(other.id)
      // A run that left `scheduled` is no longer joined.
      await store.updateRun(first.id, { status: 'running' })
      const next = makeRun({ status: 'scheduled', runAt: later, input: { user: 'a', n: 3 } })
      expect((await store.debounceRun(next, 'input.user')).id).toBe(next.id)
    })

    it('debounceRun joins a scheduled run whose key value holds the same keys in another order, or in the same one', async () => {
      const store = await createStore()
      const first = makeRun({ status: 'scheduled', runAt: now, input: { who: { org: 'o', id: 1 }, n: 1 } })
      await store.debounceRun(first, 'input.who')
      const later = '2025-01-01T00:11:00.000Z'
      const same = await store.debounceRun(
        makeRun({ status: 'scheduled', runAt: later, input: { who: { org: 'o', id: 1 }, n: 2 } }),
        'input.who',
      )
      expect(same.id).toBe(first.id)
      const swapped = await store.debounceRun(
        makeRun({ status: 'scheduled', runAt: later, input: { n: 3, who: { id: 1, org: 'o' } } }),
        'input.who',
      )
      expect(swapped).toMatchObject({ id: first.id, input: { n: 3, who: { id: 1, org: 'o' } } })
      expect(await store.listRuns({ status: 'scheduled' })).toHaveLength(1)
    })

    it('debounceRun calls racing for one key leave one run', async () => {
      const store = await createStore()
      const runs = Array.from({ length: 5 }, (_, n) => makeRun({ status: 'scheduled', runAt: now, input: { n } }))
      const ids = new Set((await Promise.all(runs.map((run) => store.debounceRun(run, undefined)))).map((run) => run.id))
      expect(ids.size).toBe(1)
      expect(await store.listRuns({ status: 'scheduled' })).toHaveLength(1)
    })
  })
}
