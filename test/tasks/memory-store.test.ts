import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import { makeRun, runStoreContract } from './store-contract.ts'

runStoreContract('MemoryRunStore', (options) => new MemoryRunStore(options))

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

  it('evicts finished runs to make room for a live one, never live runs', async () => {
    const store = new MemoryRunStore({ maxRuns: 2 })
    const [live, done] = [makeRun({ status: 'scheduled' }), makeRun({ status: 'completed' })]
    for (const run of [live, done]) await store.createRun(run)
    const next = makeRun({ status: 'running' })
    await store.createRun(next)
    expect(await store.getRun(done.id)).toBeUndefined()
    expect(await store.getRun(live.id)).toBeDefined()
    expect(store.size).toBe(2)
    await expect(store.createRun(makeRun())).rejects.toMatchObject({ code: 'STORE_FULL' })
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
