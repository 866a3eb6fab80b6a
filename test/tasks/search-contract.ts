/**
 * The search part of the RunStore contract (`RunQuery.tags`, `metadata`,
 * `from`, `to`), run by `runStoreContract` on every store.
 */
import { expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'

export function searchContract(
  createStore: (options?: { maxRuns: number }) => RunStore | Promise<RunStore>,
  makeRun: (overrides?: Partial<RunRecord>) => RunRecord,
): void {
  const ids = (runs: RunRecord[]) => runs.map((run) => run.id)

  it('lists runs by tags: every tag given must be held, newest first, with the other filters and a cursor', async () => {
    const store = await createStore()
    const tag = `tenant:${crypto.randomUUID().slice(0, 8)}`
    const both = await store.createRun(makeRun({ tags: [tag, 'plan:pro'] }))
    const one = await store.createRun(makeRun({ tags: [tag], status: 'completed' }))
    await store.createRun(makeRun({ tags: ['plan:pro'] }))
    await store.createRun(makeRun())
    const last = await store.createRun(makeRun({ tags: [tag], taskName: 'other' }))
    expect(ids(await store.listRuns({ tags: [tag] }))).toEqual([last.id, one.id, both.id])
    expect(ids(await store.listRuns({ tags: [tag, 'plan:pro'] }))).toEqual([both.id])
    expect(ids(await store.listRuns({ tags: [tag], taskName: 'report' }))).toEqual([one.id, both.id])
    expect(ids(await store.listRuns({ tags: [tag], status: 'completed' }))).toEqual([one.id])
    expect(ids(await store.listRuns({ tags: [tag], limit: 1, cursor: last.id }))).toEqual([one.id])
    expect(await store.listRuns({ tags: ['tenant:none'] })).toEqual([])
    expect((await store.getRun(both.id))?.tags).toEqual([tag, 'plan:pro'])
  })

  it('lists runs by metadata, as the run changes it: strings, and numbers and booleans by their text', async () => {
    const store = await createStore()
    const key = `k${crypto.randomUUID().slice(0, 8)}`
    const a = await store.createRun(makeRun({ metadata: { [key]: 'sent', n: 5, done: true } }))
    const b = await store.createRun(makeRun())
    await store.createRun(makeRun({ metadata: { [key]: { nested: 'sent' } } }))
    expect(ids(await store.listRuns({ metadata: { [key]: 'sent' } }))).toEqual([a.id])
    expect(ids(await store.listRuns({ metadata: { [key]: 'sent', n: '5', done: 'true' } }))).toEqual([a.id])
    expect(await store.listRuns({ metadata: { [key]: 'sent', n: '6' } })).toEqual([])
    await store.updateRun(b.id, { metadata: { [key]: 'sent' } })
    await store.updateRun(a.id, { metadata: { [key]: 'paid' } })
    expect(ids(await store.listRuns({ metadata: { [key]: 'sent' } }))).toEqual([b.id])
    expect(ids(await store.listRuns({ metadata: { [key]: 'paid' } }))).toEqual([a.id])
    // A write that leaves the metadata as it was keeps the run found.
    await store.updateRun(a.id, { status: 'completed' })
    expect(ids(await store.listRuns({ metadata: { [key]: 'paid' } }))).toEqual([a.id])
    await store.updateRun(a.id, { metadata: undefined })
    expect(await store.listRuns({ metadata: { [key]: 'paid' } })).toEqual([])
    expect((await store.getRun(b.id))?.metadata).toEqual({ [key]: 'sent' })
  })

  it('lists runs created from `from` (inclusive) to `to` (exclusive)', async () => {
    const store = await createStore()
    const at = (minute: number) => new Date(Date.UTC(2031, 4, 1, 0, minute)).toISOString()
    const runs: RunRecord[] = []
    for (let minute = 0; minute < 4; minute++) runs.push(await store.createRun(makeRun({ createdAt: at(minute) })))
    expect(ids(await store.listRuns({ from: at(1), to: at(3) }))).toEqual([runs[2].id, runs[1].id])
    expect(ids(await store.listRuns({ from: at(3) })).slice(0, 1)).toEqual([runs[3].id])
    expect(ids(await store.listRuns({ from: at(0), to: at(1) }))).toEqual([runs[0].id])
    // Page by page, each run once, with the other filters.
    const window = { from: at(0), to: at(4), taskName: 'report' }
    const first = await store.listRuns({ ...window, limit: 3 })
    expect(ids(first)).toEqual([runs[3].id, runs[2].id, runs[1].id])
    expect(ids(await store.listRuns({ ...window, limit: 3, cursor: runs[1].id }))).toEqual([runs[0].id])
    expect(await store.listRuns({ ...window, cursor: runs[0].id })).toEqual([])
  })

  it('forgets the tags and metadata of a run it evicts', async () => {
    const store = await createStore({ maxRuns: 2 })
    const tag = `t:${crypto.randomUUID().slice(0, 8)}`
    const runs: RunRecord[] = []
    for (let i = 0; i < 4; i++) runs.push(await store.createRun(makeRun({ status: 'completed', tags: [tag], metadata: { tag } })))
    const held = (await Promise.all(runs.map((run) => store.getRun(run.id)))).filter((run) => run !== undefined)
    expect(held.length).toBeLessThanOrEqual(2)
    expect(ids(await store.listRuns({ tags: [tag] }))).toEqual(ids(held).reverse())
    expect(ids(await store.listRuns({ metadata: { tag } }))).toEqual(ids(held).reverse())
  })
}
