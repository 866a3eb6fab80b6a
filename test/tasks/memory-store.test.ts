import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import { StoreFullError } from '../../src/runtime/errors.ts'
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
    expect(await store.size()).toBe(3)
  })

  it('evicts finished runs to make room for a live one, never live runs', async () => {
    const store = new MemoryRunStore({ maxRuns: 2 })
    const [live, done] = [makeRun({ status: 'scheduled' }), makeRun({ status: 'completed' })]
    for (const run of [live, done]) await store.createRun(run)
    const next = makeRun({ status: 'running' })
    await store.createRun(next)
    expect(await store.getRun(done.id)).toBeUndefined()
    expect(await store.getRun(live.id)).toBeDefined()
    expect(await store.size()).toBe(2)
    await expect(store.createRun(makeRun())).rejects.toMatchObject({ code: 'STORE_FULL' })
    expect(await store.size()).toBe(2)
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

describe('MemoryRunStore bound in bytes', () => {
  const text = (n: number) => 'b'.repeat(n)

  it('retains 256 MiB of JSON by default', () => {
    expect(new MemoryRunStore().maxBytes).toBe(268_435_456)
  })

  it('counts events with runs: 400 events of 1 MB keep it within maxBytes, finished runs going first, then the oldest events', async () => {
    const store = new MemoryRunStore({ maxBytes: 16 * 1024 * 1024 })
    const finished = await store.createRun(makeRun({ status: 'completed', input: text(1_000_000) }))
    const live = await store.createRun(makeRun({ status: 'running', input: text(1_000_000) }))
    const now = Date.now()
    for (let i = 0; i < 400; i++) {
      await store.putEvent({ id: `e${i}`, name: 'big', data: text(1_000_000), time: new Date(now + i).toISOString() })
      expect(store.bytes).toBeLessThanOrEqual(store.maxBytes)
    }
    expect(await store.getRun(finished.id)).toBeUndefined()
    expect(await store.getRun(live.id)).toBeDefined()
    const held = (await store.eventsSince('big', new Date(0).toISOString(), 1000)).map((event) => event.id)
    expect(held.length).toBeGreaterThan(10)
    expect(held.at(-1)).toBe('e399')
    expect(held).not.toContain('e0')
  })

  it('refuses an event that does not fit beside the live runs with STORE_FULL, keeping nothing of it', async () => {
    const store = new MemoryRunStore({ maxBytes: 3_000_000 })
    await store.createRun(makeRun({ status: 'running', input: text(2_500_000) }))
    const refused = store.putEvent({ id: 'big', name: 'n', data: text(1_000_000), time: new Date().toISOString() })
    await expect(refused).rejects.toBeInstanceOf(StoreFullError)
    await expect(refused).rejects.toMatchObject({ code: 'STORE_FULL', message: expect.stringMatching(/does not fit beside its live runs/) })
    expect(await store.eventsSince('n', new Date(0).toISOString(), 10)).toEqual([])
    expect((await store.listEvents({ limit: 10 })).events).toEqual([])
    // A small one still fits.
    expect((await store.putEvent({ id: 'small', name: 'n', data: 1, time: new Date().toISOString() })).created).toBe(true)
  })

  it('past maxBytes, evicts the runs that finished longest ago first', async () => {
    const store = new MemoryRunStore({ maxBytes: 35_000 })
    const runs = [0, 1, 2].map(() => makeRun({ status: 'completed', input: text(10_000) }))
    for (const run of runs) await store.createRun(run)
    expect(await store.size()).toBe(3)
    await store.createRun(makeRun({ status: 'completed', input: text(10_000) }))
    expect(await store.getRun(runs[0].id)).toBeUndefined()
    expect(await store.getRun(runs[1].id)).toBeDefined()
    expect(await store.size()).toBe(3)
    expect(store.bytes).toBeLessThanOrEqual(35_000)
    expect(store.bytes).toBeGreaterThan(30_000)
  })

  it("a run's result, step outputs and token payloads count as they are recorded", async () => {
    const store = new MemoryRunStore({ maxBytes: 40_000 })
    const oldest = makeRun({ status: 'completed', input: text(12_000) })
    const waiting = makeRun({ status: 'running', input: 1 })
    const ending = makeRun({ status: 'running', input: 2 })
    for (const run of [oldest, waiting, ending]) await store.createRun(run)
    await store.saveStep(waiting.id, 'fetch', { status: 'completed', output: text(12_000) })
    expect(await store.getRun(oldest.id)).toBeDefined()
    await store.updateRun(ending.id, { status: 'completed', result: text(12_000) })
    expect(await store.getRun(oldest.id)).toBeDefined()
    await store.putToken({ id: 'tok', runId: waiting.id, stepKey: 'ok', status: 'waiting', createdAt: waiting.createdAt })
    await store.settleToken('tok', 'completed', { note: text(12_000) })
    // 48,000 bytes of payloads: the finished runs go, oldest first, until the rest fits.
    expect(await store.getRun(oldest.id)).toBeUndefined()
    expect(await store.getRun(ending.id)).toBeDefined()
    expect(await store.getRun(waiting.id)).toBeDefined()
    await store.saveStep(waiting.id, 'more', { status: 'completed', output: text(6_000) })
    expect(await store.getRun(ending.id)).toBeUndefined()
    expect(await store.size()).toBe(1)
  })

  it('refuses a new live run with StoreFullError (503) while live runs hold maxBytes, and evicts none of them', async () => {
    const store = new MemoryRunStore({ maxBytes: 20_000 })
    const live = [makeRun({ status: 'running', input: text(10_000) }), makeRun({ status: 'suspended', input: text(10_000) })]
    for (const run of live) await store.createRun(run)
    const error = await store.createRun(makeRun({ status: 'scheduled', input: 1 })).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreFullError)
    expect(error).toMatchObject({ code: 'STORE_FULL', status: 503 })
    expect((error as Error).message).toMatch(
      /^MemoryRunStore is full: its live runs \(scheduled, queued, running or suspended\) hold [\d,]+ bytes of JSON, its maxBytes bound of 20,000\. .*raise maxBytes$/,
    )
    for (const run of live) expect(await store.getRun(run.id)).toBeDefined()
    expect(await store.size()).toBe(2)
    // Once one finishes there is room again, and it is the one evicted.
    await store.updateRun(live[0].id, { status: 'completed' })
    const next = await store.createRun(makeRun({ status: 'running', input: text(5_000) }))
    expect(await store.getRun(next.id)).toBeDefined()
    expect(await store.getRun(live[0].id)).toBeUndefined()
    expect(await store.getRun(live[1].id)).toBeDefined()
  })

  it('a debounced run that takes a new input is counted with it', async () => {
    const store = new MemoryRunStore({ maxBytes: 20_000 })
    const done = makeRun({ status: 'completed', input: 1 })
    await store.createRun(done)
    const first = makeRun({ status: 'scheduled', runAt: '2030-01-01T00:00:00.000Z', input: 1 })
    await store.debounceRun(first, undefined)
    await store.debounceRun(makeRun({ status: 'scheduled', runAt: '2030-01-01T00:00:00.000Z', input: text(25_000) }), undefined)
    expect(await store.getRun(done.id)).toBeUndefined()
    expect(store.bytes).toBeGreaterThan(25_000)
    await expect(store.createRun(makeRun({ status: 'running' }))).rejects.toBeInstanceOf(StoreFullError)
  })

  it('an invalid bound is a TypeError naming the option', () => {
    expect(() => new MemoryRunStore({ maxBytes: 0 })).toThrow(new TypeError('MemoryRunStore: maxBytes must be a positive integer (got 0)'))
    expect(() => new MemoryRunStore({ maxBytes: Number.NaN })).toThrow(TypeError)
  })
})

describe('MemoryRunStore updates', () => {
  it('counts an update and its answer in bytes, and frees them with their run', async () => {
    const store = new MemoryRunStore()
    const run = await store.createRun(makeRun({ status: 'running' }))
    const before = store.bytes
    const sentAt = new Date().toISOString()
    await store.putUpdate({ id: 'u', runId: run.id, name: 'n', sentAt, status: 'pending', data: 'x'.repeat(1_000) }, 10)
    const put = store.bytes
    expect(put - before).toBeGreaterThan(1_000)
    await store.answerUpdate(run.id, 'u', { status: 'completed', result: 'y'.repeat(2_000), answeredAt: sentAt })
    expect(store.bytes - put).toBeGreaterThan(2_000)
    // Answered again: nothing changes, nothing more is counted.
    const answered = store.bytes
    await store.answerUpdate(run.id, 'u', { status: 'completed', result: 'z'.repeat(5_000), answeredAt: sentAt })
    expect(store.bytes).toBe(answered)
    await store.updateRun(run.id, { status: 'completed', finishedAt: sentAt })
    expect(await store.pruneFinished(run.taskName, new Date(Date.now() + 60_000).toISOString(), 10)).toBe(1)
    expect(store.bytes).toBe(0)
    expect(await store.listUpdates(run.id)).toEqual([])
  })
})
