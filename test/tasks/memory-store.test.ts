import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import { makeRun, runStoreContract } from './store-contract.ts'

runStoreContract('MemoryRunStore', () => new MemoryRunStore())

describe('MemoryRunStore bound', () => {
  it('retains 10,000 runs by default', () => {
    expect(new MemoryRunStore().maxRuns).toBe(10_000)
  })

  it('evicts the runs that finished longest ago first', async () => {
    const store = new MemoryRunStore({ maxRuns: 3 })
    const a = makeRun()
    const b = makeRun()
    const c = makeRun()
    for (const run of [a, b, c]) await store.createRun(run)
    await store.updateRun(b.id, { status: 'completed' })
    await store.updateRun(a.id, { status: 'failed' })
    await store.createRun(makeRun())
    expect(await store.getRun(b.id)).toBeUndefined()
    expect(await store.getRun(a.id)).toBeDefined()
    await store.createRun(makeRun())
    expect(await store.getRun(a.id)).toBeUndefined()
    expect(store.size).toBe(3)
  })

  it('never evicts a scheduled, running or suspended run, even past the bound', async () => {
    const store = new MemoryRunStore({ maxRuns: 2 })
    const live = [makeRun({ status: 'scheduled' }), makeRun({ status: 'running' }), makeRun({ status: 'suspended' })]
    for (const run of live) await store.createRun(run)
    expect(store.size).toBe(3)
    for (const run of live) expect(await store.getRun(run.id)).toBeDefined()
    await store.updateRun(live[1].id, { status: 'completed' })
    expect(await store.getRun(live[1].id)).toBeUndefined()
    expect(store.size).toBe(2)
  })

  it('drops the idempotency key and tokens of an evicted run', async () => {
    const store = new MemoryRunStore({ maxRuns: 1 })
    const first = makeRun({ status: 'completed', idempotencyKey: 'once' })
    await store.createRun(first)
    await store.putToken({ id: 'tok', runId: first.id, stepKey: 's', status: 'completed', createdAt: first.createdAt })
    await store.createRun(makeRun({ status: 'completed' }))
    expect(await store.getRun(first.id)).toBeUndefined()
    expect(await store.getToken('tok')).toBeUndefined()
    const again = await store.createRun(makeRun({ idempotencyKey: 'once' }))
    expect(again.id).not.toBe(first.id)
  })

  it('an invalid bound is a TypeError naming the option', () => {
    expect(() => new MemoryRunStore({ maxRuns: 0 })).toThrow(/maxRuns must be a positive integer \(got 0\)/)
    expect(() => new MemoryRunStore({ maxRuns: 1.5 })).toThrow(TypeError)
  })
})
