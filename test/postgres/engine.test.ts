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
  it('a delayed run whose process died right after recording it starts on another process once due', async () => {
    const schema = `e${++schemas}`
    const ran: string[] = []
    const live = await engine(schema, [
      { path: '/api/later', module: { kind: 'task', POST: (ctx: TaskContext) => void ran.push(ctx.runId) } },
    ])
    // The process that triggered it got as far as recording the run, not its timer.
    const dying = new PostgresRunStore({ url, schema })
    const runAt = new Date(Date.now() + 200).toISOString()
    await dying.createRun(makeRun({ id: 'late', taskName: 'later', status: 'scheduled', runAt }))
    await dying.close()
    await until(async () => (await live.store.getRun('late'))?.status === 'completed')
    expect(ran).toEqual(['late'])
  })

  it('a run waiting on a child it reached through an idempotency key resumes when the child finishes on another process', async () => {
    const schema = `e${++schemas}`
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const routes: RuntimeApiRoute[] = [
      { path: '/api/child', module: { kind: 'task', POST: () => gate.then(() => 'child done') } },
      {
        path: '/api/parent',
        module: {
          kind: 'task',
          POST: (ctx: TaskContext) => ctx.step.waitForTask('wait', 'child', undefined, { idempotencyKey: 'shared' }),
        },
      },
    ]
    const a = await engine(schema, routes)
    const b = await engine(schema, routes)
    // B started the child; A's parent finds it through the key, so B does not know A waits.
    const child = await b.runtime.trigger('child', undefined, { idempotencyKey: 'shared' })
    const parent = await a.runtime.trigger('parent')
    await until(async () => (await a.store.getRun(parent.id))?.status === 'suspended')
    expect((await a.store.getRun(parent.id))?.suspended?.waitpoint).toMatchObject({ type: 'task', runId: child.id })
    release()
    await until(async () => (await a.store.getRun(parent.id))?.status === 'completed')
    expect((await a.store.getRun(parent.id))?.result).toEqual({ ok: true, result: 'child done' })
  })

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

describe('events on a shared PostgresRunStore', () => {
  it('an event sent the moment a run suspends resumes it once, though the wait looks for it while the send delivers it, in the process that still holds the run', async () => {
    const route: RuntimeApiRoute = {
      path: '/api/waiter',
      module: {
        route: { kind: 'task' },
        POST: (ctx: TaskContext<{ i: number }>) => ctx.step.waitForEvent('e', 'go', { match: { i: ctx.input.i } }),
      },
    }
    const { runtime } = await engine(`e${++schemas}`, [route])
    for (let i = 0; i < 30; i++) {
      const run = await runtime.trigger('waiter', { i })
      // Sent as soon as the run reads as suspended: its process has not yet
      // armed the wait nor given up the run's lease.
      while ((await runtime.getRun(run.id))?.status !== 'suspended') await new Promise((resolve) => setImmediate(resolve))
      await runtime.sendEvent('go', { i })
      expect((await runtime.waitForRun(run.id)).result).toMatchObject({ event: { name: 'go', data: { i } } })
    }
  })
})
