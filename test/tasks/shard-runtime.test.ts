import { describe, expect, it } from 'vitest'
import { runIdShard } from '../../src/runtime/tasks/base/ids.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { RuntimeShard, ShardHere, ShardPeers } from '../../src/runtime/types/shard.ts'
import { finished, runtime, task, until } from './_helpers.ts'

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

/**
 * Two runtimes of two shards, each on a store of its own, whose children
 * go where `place` says (`undefined`: the parent's shard) and reach each
 * other in process, as the tasks objects reach each other by their stubs.
 * `word.lost` drops the word of a child's end on its way to the parent.
 */
function peeredPair(routes: ReturnType<typeof task>[], place: (name: string) => number | undefined) {
  const word = { lost: false }
  const heres: ShardHere[] = []
  const runtimes: ReturnType<typeof runtime>[] = []
  const peers: ShardPeers = {
    trigger: (shard, name, payload, opts) => runtimes[shard].trigger(name, payload, opts),
    getRun: (shard, id) => runtimes[shard].getRun(id),
    cancel: (shard, id, children) => runtimes[shard].cancel(id, { children }),
    childFinished: async (shard, child) => {
      if (word.lost) throw new Error('the call did not arrive')
      await heres[shard].childFinished(child)
    },
  }
  const shards = [0, 1].map((index) => {
    const shard: RuntimeShard = {
      index,
      ownsEventRun: () => index === 0,
      firesSchedule: () => index === 0,
      childShard: (def) => place(def.name),
      peers,
      connect: (here) => {
        heres[index] = here
      },
    }
    const store = new MemoryRunStore()
    const rt = runtime(routes, { store, shard })
    runtimes[index] = rt
    return { store, rt }
  })
  return { shards, word }
}

describe('child runs of a shard that start in another', () => {
  it("start in the shard their task's place names, and their parent resumes with their output", async () => {
    const { shards } = peeredPair(
      [
        task('parent', async (ctx) => {
          const sent = await ctx.step.enqueue('fire', 'limited', { n: 1 })
          const met = await ctx.step.waitForTask('kid', 'limited', { n: 2 })
          return { sent: sent.runId, met }
        }),
        task('limited', (ctx) => (ctx.input as { n: number }).n * 10, { route: { concurrency: 1 } }),
      ],
      (name) => (name === 'limited' ? 1 : undefined),
    )
    const [zero, one] = shards
    const parent = await zero.rt.trigger('parent', {})
    const done = await finished(zero.rt.waitForRun(parent.id))
    expect(done.status).toBe('completed')
    const children = await one.store.listRuns({ taskName: 'limited' })
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(runIdShard(child.id)).toBe(1)
      expect(child.parentRunId).toBe(parent.id)
    }
    expect(await zero.store.listRuns({ taskName: 'limited' })).toEqual([])
    const result = done.result as { sent: string; met: { ok: boolean; result: number } }
    expect(children.map((child) => child.id)).toContain(result.sent)
    expect(result.met).toMatchObject({ ok: true, result: 20 })
    // Resumed: its next look at the child is dropped.
    await expect.poll(() => zero.store.listTimers()).toEqual([])
  })

  it('are cancelled with their parent in the shard that holds them', async () => {
    const { shards } = peeredPair(
      [task('parent', (ctx) => ctx.step.waitForTask('kid', 'sleeper', {})), task('sleeper', (ctx) => ctx.step.sleep('long', 86_400))],
      (name) => (name === 'sleeper' ? 1 : undefined),
    )
    const [zero, one] = shards
    const parent = await zero.rt.trigger('parent', {})
    const child = await until(async () => {
      const [run] = await one.store.listRuns({ taskName: 'sleeper', status: 'suspended' })
      return run
    })
    await until(async () => (await zero.rt.getRun(parent.id))?.status === 'suspended')
    const cancelled = await zero.rt.cancel(parent.id)
    expect(cancelled.cancelledWith).toEqual([child.id])
    expect((await one.rt.getRun(child.id))?.status).toBe('cancelled')
    for (const { rt } of shards) await rt.close()
  })

  it("with children: 'all', the runs a parent enqueued into another shard are cancelled there, with those they enqueued", async () => {
    const { shards } = peeredPair(
      [
        task('parent', async (ctx) => {
          await ctx.step.enqueue('kid', 'spawner', {})
          await ctx.step.sleep('long', 86_400)
        }),
        task('spawner', async (ctx) => {
          await ctx.step.enqueue('grandkid', 'sleeper', {})
          await ctx.step.sleep('long', 86_400)
        }),
        task('sleeper', (ctx) => ctx.step.sleep('long', 86_400)),
      ],
      (name) => (name === 'parent' ? undefined : 1),
    )
    const [zero, one] = shards
    const parent = await zero.rt.trigger('parent', {})
    const [kid, grandkid] = await until(async () => {
      const [k] = await one.store.listRuns({ taskName: 'spawner', status: 'suspended' })
      const [g] = await one.store.listRuns({ taskName: 'sleeper', status: 'suspended' })
      return k && g ? [k, g] : undefined
    })
    await until(async () => (await zero.rt.getRun(parent.id))?.status === 'suspended')
    expect((await zero.rt.cancel(parent.id, { children: 'all' })).cancelledWith).toEqual([kid.id, grandkid.id])
    expect([(await one.rt.getRun(kid.id))?.status, (await one.rt.getRun(grandkid.id))?.status]).toEqual(['cancelled', 'cancelled'])
    for (const { rt } of shards) await rt.close()
  })

  it("hold their task's concurrency across the parents of every shard", async () => {
    let running = 0
    let most = 0
    const { shards } = peeredPair(
      [
        task('parent', (ctx) => ctx.step.waitForTask('kid', 'limited', {})),
        task(
          'limited',
          async () => {
            most = Math.max(most, ++running)
            await new Promise((resolve) => setTimeout(resolve, 20))
            running--
            return 'ok'
          },
          { route: { concurrency: 1 } },
        ),
      ],
      (name) => (name === 'limited' ? 1 : undefined),
    )
    const parents = await Promise.all(shards.flatMap(({ rt }) => Array.from({ length: 4 }, () => rt.trigger('parent', {}))))
    for (const parent of parents) {
      const rt = shards[runIdShard(parent.id)!].rt
      expect((await finished(rt.waitForRun(parent.id))).result).toMatchObject({ ok: true, result: 'ok' })
    }
    expect(most).toBe(1)
    expect(await shards[1].store.listRuns({ taskName: 'limited' })).toHaveLength(8)
  })

  it('a parent whose word of the end was lost finds out by looking: on recovery, and on its own timer', async () => {
    let release = () => {}
    const { shards, word } = peeredPair(
      [
        task('parent', (ctx) => ctx.step.waitForTask('kid', 'limited', {})),
        task('limited', () => new Promise((resolve) => (release = () => resolve('late'))), { route: { concurrency: 1 } }),
      ],
      (name) => (name === 'limited' ? 1 : undefined),
    )
    const [zero, one] = shards
    word.lost = true
    /** A parent suspended on its child, which then finishes with its word lost. */
    async function waitingAfterTheEnd() {
      const parent = await zero.rt.trigger('parent', {})
      await expect.poll(async () => (await zero.store.listTimers()).some((timer) => timer.runId === parent.id)).toBe(true)
      expect((await zero.store.listTimers()).find((timer) => timer.runId === parent.id)).toMatchObject({ kind: 'child', stepKey: 'kid' })
      const ended = (await one.store.listRuns({ taskName: 'limited', status: 'completed' })).length
      release()
      await expect.poll(async () => (await one.store.listRuns({ taskName: 'limited', status: 'completed' })).length).toBe(ended + 1)
      await expect.poll(() => one.rt.logger.lines.some((line) => line.text.includes('could not tell shard 0'))).toBe(true)
      expect((await zero.store.getRun(parent.id))?.status).toBe('suspended')
      return parent
    }
    // Recovery looks at the child in the other shard.
    const first = await waitingAfterTheEnd()
    await zero.rt.recover()
    expect((await finished(zero.rt.waitForRun(first.id))).result).toMatchObject({ ok: true, result: 'late' })
    // Without one, its timer looks again, 5 seconds after the suspension.
    const second = await waitingAfterTheEnd()
    expect((await finished(zero.rt.waitForRun(second.id))).result).toMatchObject({ ok: true, result: 'late' })
    await expect.poll(() => zero.store.listTimers()).toEqual([])
  }, 20_000)

  it('a child the caller gave a key goes to the shard of that key, from parents of any shard, and is started once', async () => {
    const { shards } = peeredPair(
      [task('parent', (ctx) => ctx.step.waitForTask('kid', 'once', {}, { idempotencyKey: 'the-one' })), task('once', () => 'done')],
      () => 1,
    )
    const parents = await Promise.all(shards.map(({ rt }) => rt.trigger('parent', {})))
    for (const [i, parent] of parents.entries()) {
      expect((await finished(shards[i].rt.waitForRun(parent.id))).result).toMatchObject({ ok: true, result: 'done' })
    }
    expect(await shards[1].store.listRuns({ taskName: 'once' })).toHaveLength(1)
  })
})
