// The task engine on a shared PostgresRunStore, in one test process: each
// runtime has its own store and connections, as separate processes would.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('engine')
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

async function engine(schema: string, routes: RuntimeApiRoute[], pollMs = 50): Promise<{ runtime: TaskRuntime; store: PostgresRunStore }> {
  const store = new PostgresRunStore({ url, schema, pollMs, leaseMs: 60_000 })
  const runtime = createTaskRuntime({ routes, store, logger: quiet })
  opened.push({ runtime, store })
  await runtime.recover()
  return { runtime, store }
}

describe('the task engine on a shared PostgresRunStore', () => {
  it('a run cancelled on another process has its attempt aborted where it runs, which records nothing more', async () => {
    const schema = `e${++schemas}`
    let aborted!: (reason: unknown) => void
    const abort = new Promise<unknown>((resolve) => (aborted = resolve))
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/long',
        module: {
          kind: 'task',
          async POST(ctx: TaskContext) {
            await ctx.step.run('first', () => 1)
            await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
            aborted(ctx.signal.reason)
            await ctx.step.run('after', () => 2)
          },
        },
      },
    ]
    const a = await engine(schema, routes)
    const b = await engine(schema, routes)
    const run = await a.runtime.trigger('long')
    await until(async () => (await a.store.getRun(run.id))?.steps.first !== undefined)
    expect((await b.runtime.cancel(run.id)).status).toBe('cancelled')
    // Well before A renews its lease (leaseMs / 3 = 20 s): B wakes it.
    expect(await abort).toBeInstanceOf(Error)
    await a.runtime.drain(5000)
    const after = await a.store.getRun(run.id)
    expect(after).toMatchObject({ status: 'cancelled', ok: false })
    expect(Object.keys(after!.steps)).toEqual(['first'])
    expect(after!.attempts).toEqual([])
  })

  it('a draining engine finishes its own attempts but takes no new work from the others', async () => {
    const schema = `e${++schemas}`
    const ran: string[] = []
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const routes: RuntimeApiRoute[] = [
      { path: '/api/hold', module: { kind: 'task', POST: () => held } },
      { path: '/api/noop', module: { kind: 'task', POST: (ctx: TaskContext) => void ran.push(ctx.runId) } },
    ]
    const a = await engine(schema, routes)
    const run = await a.runtime.trigger('hold')
    const draining = a.runtime.drain(5000)
    // An attempt nobody holds appears while A drains: another process's, cut off.
    // Its lease lasts 1 ms, as if its process had died at once.
    const cut = new PostgresRunStore({ url, schema, leaseMs: 1 })
    await cut.createRun(makeRun({ id: 'orphan', taskName: 'noop', status: 'running' }))
    await cut.close()
    // Several of A's polls pass.
    await new Promise((resolve) => setTimeout(resolve, 300))
    release()
    await draining
    expect((await a.store.getRun(run.id))?.status).toBe('completed')
    expect(ran).toEqual([])
    expect((await a.store.getRun('orphan'))?.status).toBe('running')
    // A live engine takes it.
    const b = await engine(schema, routes)
    await until(async () => (await b.store.getRun('orphan'))?.status === 'completed')
    expect(ran).toEqual(['orphan'])
  })
})
