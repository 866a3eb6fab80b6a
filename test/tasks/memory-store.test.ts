import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { makeRun, runStoreContract } from './store-contract.ts'

runStoreContract('MemoryRunStore', (options) => new MemoryRunStore(options))

describe('MemoryRunStore steps', () => {
  const step = (n: number) => ({ status: 'completed' as const, output: n })

  it('a run of thousands of steps reads back whole on every read, each read its own', async () => {
    const store = new MemoryRunStore()
    const steps: RunRecord['steps'] = {}
    for (let i = 0; i < 1_500; i++) steps[`s${i}`] = step(i)
    const run = makeRun({ steps })
    await store.createRun(run)
    const first = (await store.getRun(run.id))!
    const second = (await store.getRun(run.id))!
    expect(first.steps).not.toBe(second.steps)
    expect(first.steps).toEqual(steps)
    expect(second.steps).toEqual(steps)
    first.steps.extra = step(-1)
    delete second.steps.s0
    await store.saveStep(run.id, 's1500', step(1_500))
    const third = (await store.getRun(run.id))!
    const fourth = (await store.listRuns())[0]
    expect(Object.keys(third.steps)).toHaveLength(1_501)
    expect(third.steps.s0).toEqual(step(0))
    expect(third.steps.extra).toBeUndefined()
    expect(fourth.steps).toEqual(third.steps)
    expect(fourth.steps).not.toBe(third.steps)
    expect(Object.keys(first.steps)).toHaveLength(1_501)
    expect(first.steps.s1500).toBeUndefined()
  })

  it('a run that grows past a thousand steps keeps every one, in order, overwrites included', async () => {
    const store = new MemoryRunStore()
    const run = makeRun()
    await store.createRun(run)
    const early = (await store.getRun(run.id))!
    for (let i = 0; i < 1_200; i++) {
      await store.saveStep(run.id, `s${i}`, step(i))
      if (i % 400 === 0) await store.getRun(run.id)
    }
    await store.saveStep(run.id, 's3', step(-3))
    const read = (await store.getRun(run.id))!
    expect(Object.keys(read.steps)).toEqual(Array.from({ length: 1_200 }, (_, i) => `s${i}`))
    expect(read.steps.s3).toEqual(step(-3))
    expect(read.steps.s1199).toEqual(step(1_199))
    expect(early.steps).toEqual({})
  })

  it('a step record cannot be changed through a read, and the caller keeps the record it saved', async () => {
    const store = new MemoryRunStore()
    const run = makeRun()
    await store.createRun(run)
    const saved = step(1)
    await store.saveStep(run.id, 'a', saved)
    saved.output = 2
    const read = (await store.getRun(run.id))!
    expect(() => {
      read.steps.a.output = 3
    }).toThrow(TypeError)
    expect((await store.getRun(run.id))!.steps.a).toEqual(step(1))
  })
})

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
