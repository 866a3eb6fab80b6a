/**
 * `maxConcurrentRuns`: the handlers one runtime runs at once. Runs past it
 * wait their turn, in the store as `running`, and start as handlers end,
 * higher priority first; a batch of 10,000 items never runs more than the
 * cap at once, and every item completes.
 */
import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { TaskContext } from '../../src/types.ts'
import { finished, runtime, sleep, task, until } from './_helpers.ts'

describe('maxConcurrentRuns', () => {
  it('a batch of 10,000 items runs at most 100 handlers at once by default, and every item completes', async () => {
    let running = 0
    let most = 0
    const rt = runtime(
      [
        task('import.row', async () => {
          most = Math.max(most, ++running)
          await sleep(1)
          running--
          return 'ok'
        }),
      ],
      { store: new MemoryRunStore({ maxRuns: 20_000 }) },
    )
    const runs = await rt.triggerMany(
      'import.row',
      Array.from({ length: 10_000 }, (_, row) => ({ row })),
    )
    await until(
      async () => (await rt.store.countRunsByTask('completed')).reduce((sum, each) => sum + each.count, 0) === runs.length,
      60_000,
    )
    expect(most).toBe(100)
  }, 90_000)

  it('runs waiting for a slot start by priority, then in the order they came; a cancelled one never starts', async () => {
    const started: string[] = []
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    const rt = runtime(
      [
        task('report', async (ctx: TaskContext<{ name: string }>) => {
          started.push(ctx.input.name)
          if (ctx.input.name === 'first') await gate
          return ctx.input.name
        }),
      ],
      { maxConcurrentRuns: 1 },
    )
    const first = await rt.trigger('report', { name: 'first' })
    await until(() => started.length === 1)
    const low = await rt.trigger('report', { name: 'low' }, { priority: -1 })
    const plain = await rt.trigger('report', { name: 'plain' })
    const high = await rt.trigger('report', { name: 'high' }, { priority: 5 })
    const dropped = await rt.trigger('report', { name: 'dropped' }, { priority: 9 })
    await rt.cancel(dropped.id)
    // Waiting for the slot, they are running runs in the store.
    expect((await rt.getRun(plain.id))?.status).toBe('running')
    open()
    for (const run of [first, low, plain, high]) expect((await finished(rt.waitForRun(run.id))).status).toBe('completed')
    expect(started).toEqual(['first', 'high', 'plain', 'low'])
    expect((await rt.getRun(dropped.id))?.status).toBe('cancelled')
  })

  it('must be a positive whole number', () => {
    expect(() => runtime([task('t', () => 1)], { maxConcurrentRuns: 0 })).toThrow(
      'createTaskRuntime(): maxConcurrentRuns must be a positive whole number of runs (got 0)',
    )
  })
})
