// The data chunks of a run (`ctx.stream`) on a PostgresRunStore: kept in
// the run's record in order, beside its steps, and a run resumed by
// another runtime on the same schema goes on after them without sending
// any twice.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { tokenIdFor } from '../../src/index.ts'
import { PostgresRunStore } from '../../src/postgres.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RunRecord, RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('chunks')
})

const opened: { runtime: TaskRuntime; store: PostgresRunStore }[] = []
afterEach(async () => {
  for (const { runtime, store } of opened.splice(0)) {
    await runtime.close()
    await store.close()
  }
})
const quiet = { info() {}, warn() {}, error() {} }

function engine(routes: RuntimeApiRoute[]): { runtime: TaskRuntime; store: PostgresRunStore } {
  const store = new PostgresRunStore({ url, schema: 'chunks', pollMs: 50, leaseMs: 60_000 })
  const runtime = createTaskRuntime({ routes, store, logger: quiet })
  opened.push({ runtime, store })
  return { runtime, store }
}

const said = (run: RunRecord | undefined) => (run?.chunks?.kept ?? []).map((chunk) => `${chunk.seq}:${chunk.name}:${chunk.data}`)

const routes: RuntimeApiRoute[] = [
  {
    path: '/api/write',
    module: {
      kind: 'task',
      POST: async (ctx: TaskContext) => {
        await ctx.step.run('load', () => 1)
        for (const word of ['a', 'b']) void ctx.stream('text', word)
        await ctx.step.waitForToken('go')
        await ctx.stream('text', 'c')
        return 'written'
      },
    },
  },
]

describe('chunks on a PostgresRunStore', () => {
  it('keeps them in the run, in order, and a run resumed by another runtime sends none twice', async () => {
    const first = engine(routes)
    const { id } = await first.runtime.trigger('write')
    await until(async () => (await first.store.getRun(id))?.status === 'suspended')
    const suspended = await first.store.getRun(id)
    expect(said(suspended)).toEqual(['1:text:a', '2:text:b'])
    expect(Object.keys(suspended!.steps)).toEqual(['load'])

    const second = engine(routes)
    await second.runtime.recover()
    expect(await second.runtime.completeToken(tokenIdFor(id, 'go'))).toBe('completed')
    await until(async () => (await second.store.getRun(id))?.status === 'completed')
    expect(said(await second.store.getRun(id))).toEqual(['1:text:a', '2:text:b', '3:text:c'])
  })
})
