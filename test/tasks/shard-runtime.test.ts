import { describe, expect, it } from 'vitest'
import { runIdShard } from '../../src/runtime/tasks/ids.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { RuntimeShard } from '../../src/runtime/types/shard.ts'
import { finished, runtime, task } from './_helpers.ts'

/** Two runtimes of two shards on stores of their own, as the tasks objects of a worker. */
function pair(routes: ReturnType<typeof task>[], owner: (name: string) => number) {
  return [0, 1].map((index) => {
    const shard: RuntimeShard = {
      index,
      ownsEventRun: (def) => owner(def.name) === index,
      firesSchedule: (def) => owner(def.name) === index,
    }
    const store = new MemoryRunStore()
    return { store, rt: runtime(routes, { store, shard }) }
  })
}

describe('a runtime that is one shard of several', () => {
  it('stamps its shard into the ids of the runs it makes, children and failed event runs too', async () => {
    const [, one] = pair([task('parent', async (ctx) => ctx.step.waitForTask('kid', 'child', {})), task('child', () => 'kid')], () => 1)
    const parent = await finished(one.rt.waitForRun((await one.rt.trigger('parent', {})).id))
    expect(parent.status).toBe('completed')
    const ids = (await one.store.listRuns()).map((run) => run.id)
    expect(ids).toHaveLength(2)
    for (const id of ids) expect(runIdShard(id)).toBe(1)
  })

  it('records every event and meets its waits in every shard, and starts each run of it in the shard that owns it', async () => {
    const routes = [
      task('on.a', () => 'a', { route: { on: 'paid' } }),
      task('on.b', () => 'b', { route: { on: 'paid' } }),
      task('waiter', async (ctx) => {
        const met = await ctx.step.waitForEvent('w', 'paid')
        return 'event' in met ? met.event.id : 'timed out'
      }),
    ]
    const shards = pair(routes, (name) => (name === 'on.a' ? 0 : 1))
    const waiting = await Promise.all(shards.map(({ rt }) => rt.trigger('waiter', {})))
    for (const [i, { store }] of shards.entries()) {
      await expect.poll(async () => (await store.getRun(waiting[i].id))?.status).toBe('suspended')
    }
    const sent = await Promise.all(shards.map(({ rt }) => rt.sendEvent('paid', {}, { id: 'evt-1' })))
    expect(sent.map((answer) => answer.runs.map((run) => run.taskName))).toEqual([['on.a'], ['on.b']])
    expect(sent.map((answer) => answer.resumed)).toEqual([[waiting[0].id], [waiting[1].id]])
    for (const [i, { rt }] of shards.entries()) expect((await finished(rt.waitForRun(waiting[i].id))).result).toBe('evt-1')
    // Sent again, nothing more starts anywhere.
    const again = await Promise.all(shards.map(({ rt }) => rt.sendEvent('paid', {}, { id: 'evt-1' })))
    expect(again.map((answer) => answer.runs.map((run) => run.id))).toEqual(sent.map((answer) => answer.runs.map((run) => run.id)))
    expect((await shards[0].store.listRuns({ taskName: 'on.b' })).length).toBe(0)
  })

  it('fires the ticks of the schedules it owns, and none of the others', async () => {
    const routes = [task('tick.a', () => 'a', { schedule: '* * * * *' }), task('tick.b', () => 'b', { schedule: '* * * * *' })]
    const shards = pair(routes, (name) => (name === 'tick.a' ? 0 : 1))
    const fired = await Promise.all(shards.map(({ rt }) => rt.runScheduled('* * * * *')))
    expect(fired.map((runs) => runs.map((run) => run.taskName))).toEqual([['tick.a'], ['tick.b']])
    // A shard that owns none of the due tasks says nothing about it.
    for (const { rt } of shards) expect(rt.logger.lines.filter((line) => line.level === 'warn')).toEqual([])
  })
})
