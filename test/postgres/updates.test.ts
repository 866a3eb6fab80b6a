// Updates (update-cases.ts) on Postgres, each case in a schema of its own;
// and updates across two engines on one schema, each with its own store
// and connections, as two processes would have: an update sent through
// one is answered by the run the other suspended (woken for it), and by
// the run the other holds busy, once it waits.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'
import { updateCases } from '../tasks/update-cases.ts'
import { createDatabase, storePerCase } from './_pg.ts'

updateCases('Postgres', storePerCase('updates'))

describe('updates across two engines on one Postgres', () => {
  let url: string
  beforeAll(async () => {
    url = await createDatabase('updates_shared')
  })
  const opened: { runtime: TaskRuntime; store: PostgresRunStore }[] = []
  afterEach(async () => {
    for (const { runtime, store } of opened.splice(0)) {
      await runtime.close()
      await store.close()
    }
  })
  let schemas = 0
  const quiet = { info() {}, warn() {}, error() {} }
  async function engine(schema: string, routes: RuntimeApiRoute[]) {
    const store = new PostgresRunStore({ url, schema, pollMs: 50 })
    const runtime = createTaskRuntime({ routes, store, logger: quiet })
    opened.push({ runtime, store })
    await runtime.recover()
    return runtime
  }

  it('an update sent through one engine is answered by the run the other suspended, and by the one it holds busy once that waits', async () => {
    const schema = `u${++schemas}`
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/counter',
        module: {
          kind: 'task',
          POST: async (ctx: TaskContext<{ busy?: boolean }>) => {
            let count = 0
            ctx.onUpdate('bump', { handler: (by: number) => (count += by) })
            if (ctx.input?.busy) await ctx.step.run('busy', () => gate)
            await ctx.step.waitForSignal('stop', 'stop', { timeoutSeconds: 60 })
            return count
          },
        },
      },
    ]
    const holder = await engine(schema, routes)
    const sender = await engine(schema, routes)
    const waiting = await holder.trigger('counter', {})
    const busy = await holder.trigger('counter', { busy: true })
    await until(async () => (await holder.getRun(waiting.id))?.status === 'suspended')
    expect(await sender.updateRun(waiting.id, 'bump', 2, { timeoutSeconds: 20 })).toBe(2)
    expect(await sender.updateRun(waiting.id, 'bump', 3, { timeoutSeconds: 20 })).toBe(5)
    // The busy run is the holder's, running: it answers when it next waits.
    const answer = sender.updateRun(busy.id, 'bump', 7, { timeoutSeconds: 20 })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await holder.listUpdates(busy.id)).map((u) => u.status)).toEqual(['pending'])
    release()
    expect(await answer).toBe(7)
    await sender.sendSignal(waiting.id, 'stop')
    await sender.sendSignal(busy.id, 'stop')
    const done = await Promise.all([until(() => finished(holder, waiting.id)), until(() => finished(holder, busy.id))])
    expect(done.map((run) => run.result)).toEqual([5, 7])
  })
})

async function finished(runtime: TaskRuntime, id: string) {
  const run = await runtime.getRun(id)
  return run?.status === 'completed' ? run : undefined
}
