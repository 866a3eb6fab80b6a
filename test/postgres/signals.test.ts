// Signals (signal-cases.ts) on Postgres, each case in a schema of its own;
// and signals across two engines on one schema, each with its own store
// and connections, as two processes would have: a signal sent through one
// meets the run the other suspended, or the run the other has busy before
// its wait.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { until } from '../tasks/_helpers.ts'
import { signalCases } from '../tasks/signal-cases.ts'
import { createDatabase, storePerCase } from './_pg.ts'

signalCases('Postgres', storePerCase('signals'))

describe('signals across two engines on one Postgres', () => {
  let url: string
  beforeAll(async () => {
    url = await createDatabase('signals_shared')
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

  it('a signal sent through one engine resumes the run the other suspended, or the one it holds busy before its wait', async () => {
    const schema = `s${++schemas}`
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/chat',
        module: {
          kind: 'task',
          POST: async (ctx: TaskContext<{ busy?: boolean }>) => {
            if (ctx.input?.busy) await ctx.step.run('busy', () => gate)
            return ctx.step.waitForSignal('answer', 'answer', { timeoutSeconds: 60 })
          },
        },
      },
    ]
    const holder = await engine(schema, routes)
    const sender = await engine(schema, routes)
    const waiting = await holder.trigger('chat', {})
    const busy = await holder.trigger('chat', { busy: true })
    await until(async () => (await holder.getRun(waiting.id))?.status === 'suspended')
    await sender.sendSignal(waiting.id, 'answer', 'to the waiting run')
    await sender.sendSignal(busy.id, 'answer', 'to the busy run')
    // The busy run is the holder's, running: the signal is kept for its wait.
    expect((await holder.getRun(busy.id))?.status).toBe('running')
    release()
    const done = await Promise.all([until(() => finished(holder, waiting.id)), until(() => finished(holder, busy.id))])
    expect(done.map((run) => run.result)).toEqual([
      expect.objectContaining({ data: 'to the waiting run' }),
      expect.objectContaining({ data: 'to the busy run' }),
    ])
    expect((await sender.listSignals(busy.id)).map((s) => s.takenBy)).toEqual([`${busy.id}:answer:signal`])
  })
})

async function finished(runtime: TaskRuntime, id: string) {
  const run = await runtime.getRun(id)
  return run?.status === 'completed' ? run : undefined
}
