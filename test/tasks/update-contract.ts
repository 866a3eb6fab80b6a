/**
 * The updates part of the RunStore contract (`putUpdate`, `answerUpdate`,
 * `getUpdate`, `listUpdates`; types/updates.ts), run by `runStoreContract`
 * on every store that keeps updates.
 */
import { expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord, UpdateAnswer, UpdateRecord } from '../../src/types.ts'

export function updateContract(
  createStore: (options?: { maxRuns: number }) => RunStore | Promise<RunStore>,
  makeRun: (overrides?: Partial<RunRecord>) => RunRecord,
): void {
  let sent = 0
  const update = (runId: string, id: string, name: string, data?: unknown): UpdateRecord => ({
    id,
    runId,
    name,
    // A second apart, in the order they were made.
    sentAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sent++)).toISOString(),
    status: 'pending',
    ...(data === undefined ? {} : { data }),
  })
  const completed = (result?: unknown): UpdateAnswer => ({
    status: 'completed',
    answeredAt: new Date().toISOString(),
    ...(result === undefined ? {} : { result }),
  })

  it('keeps an update once per id: a second put answers with the one kept, whatever its data', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const kept = update(run.id, 'a', 'rename', { to: 'x' })
    expect(await store.putUpdate(kept, 3)).toEqual({ update: kept, kept: true })
    expect(await store.putUpdate(update(run.id, 'a', 'other', { to: 'y' }), 3)).toEqual({ update: kept, kept: false })
    expect(await store.getUpdate(run.id, 'a')).toEqual(kept)
    expect(await store.getUpdate(run.id, 'missing')).toBeUndefined()
    expect(await store.getUpdate('no-such-run', 'a')).toBeUndefined()
  })

  it('refuses a put with full while the run holds maxPending pending updates; answered ones do not count', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const other = await store.createRun(makeRun({ status: 'running' }))
    for (const id of ['a', 'b', 'c']) expect(await store.putUpdate(update(run.id, id, 'n'), 3)).toMatchObject({ kept: true })
    expect(await store.putUpdate(update(run.id, 'd', 'n'), 3)).toBe('full')
    expect(await store.getUpdate(run.id, 'd')).toBeUndefined()
    // An id the run holds is answered as held, full or not.
    expect(await store.putUpdate(update(run.id, 'a', 'n'), 3)).toMatchObject({ kept: false, update: { id: 'a' } })
    // The bound is per run, and an id is unique within its run only.
    expect(await store.putUpdate(update(other.id, 'a', 'n'), 3)).toMatchObject({ kept: true })
    await store.answerUpdate(run.id, 'b', completed(1))
    expect(await store.putUpdate(update(run.id, 'd', 'n'), 3)).toMatchObject({ kept: true })
    expect(await store.putUpdate(update(run.id, 'e', 'n'), 3)).toBe('full')
  })

  it('answers a pending update once: a second answer gets the first unchanged', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const kept = update(run.id, 'u', 'rename', 'x')
    await store.putUpdate(kept, 3)
    const first = completed({ name: 'x' })
    const answered = { ...kept, status: 'completed', result: { name: 'x' }, answeredAt: first.answeredAt }
    expect(await store.answerUpdate(run.id, 'u', first)).toEqual(answered)
    const second: UpdateAnswer = {
      status: 'failed',
      error: { code: 'UPDATE_FAILED', message: 'late' },
      answeredAt: new Date().toISOString(),
    }
    expect(await store.answerUpdate(run.id, 'u', second)).toEqual(answered)
    expect(await store.getUpdate(run.id, 'u')).toEqual(answered)
    expect(await store.answerUpdate(run.id, 'missing', first)).toBeUndefined()
    expect(await store.answerUpdate('no-such-run', 'u', first)).toBeUndefined()
  })

  it('answers an update once of two answers at once', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    await store.putUpdate(update(run.id, 'u', 'go'), 3)
    const [a, b] = await Promise.all([store.answerUpdate(run.id, 'u', completed('a')), store.answerUpdate(run.id, 'u', completed('b'))])
    expect(a).toEqual(b)
    expect(await store.getUpdate(run.id, 'u')).toEqual(a)
  })

  it('keeps a run to maxPending pending updates of puts at once', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const puts = await Promise.all(Array.from({ length: 8 }, (_, i) => store.putUpdate(update(run.id, `u${i}`, 'n'), 3)))
    expect(puts.filter((put) => put !== 'full')).toHaveLength(3)
    expect(await store.listUpdates(run.id)).toHaveLength(3)
  })

  it('lists a run’s updates oldest first, only the pending ones with pending: true, and none of another run', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const other = await store.createRun(makeRun({ status: 'running' }))
    for (const id of ['c', 'a', 'b']) await store.putUpdate(update(run.id, id, 'n'), 10)
    await store.putUpdate(update(other.id, 'z', 'n'), 10)
    await store.answerUpdate(run.id, 'a', completed())
    expect((await store.listUpdates(run.id)).map((u) => [u.id, u.status])).toEqual([
      ['c', 'pending'],
      ['a', 'completed'],
      ['b', 'pending'],
    ])
    expect((await store.listUpdates(run.id, { pending: true })).map((u) => u.id)).toEqual(['c', 'b'])
    expect((await store.listUpdates(other.id)).map((u) => u.id)).toEqual(['z'])
    expect(await store.listUpdates('no-such-run')).toEqual([])
    expect(await store.listUpdates('no-such-run', { pending: true })).toEqual([])
  })

  it('leaves absent what an update lacks, and keeps results and errors whole', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const bare = update(run.id, 'bare', 'ping')
    const put = await store.putUpdate(bare, 10)
    expect(put).toEqual({ update: bare, kept: true })
    expect(Object.keys((await store.getUpdate(run.id, 'bare'))!).sort()).toEqual(['id', 'name', 'runId', 'sentAt', 'status'])
    // An answer of `undefined`: completed with no result.
    const done = (await store.answerUpdate(run.id, 'bare', completed()))!
    expect(Object.keys(done).sort()).toEqual(['answeredAt', 'id', 'name', 'runId', 'sentAt', 'status'])
    expect(Object.keys((await store.listUpdates(run.id))[0]).sort()).toEqual(Object.keys(done).sort())
    // A null is a value, kept as one.
    await store.putUpdate(update(run.id, 'nulls', 'ping', null), 10)
    expect(await store.answerUpdate(run.id, 'nulls', completed(null))).toMatchObject({ data: null, result: null })
    const result = { list: [1, 'two', { three: true }], nested: { n: 1.5 } }
    await store.putUpdate(update(run.id, 'ok', 'ping', { in: [1, 2] }), 10)
    expect(await store.answerUpdate(run.id, 'ok', completed(result))).toMatchObject({ data: { in: [1, 2] }, result })
    const error = { code: 'INVALID_UPDATE_INPUT', message: 'bad input', issues: [{ message: 'expected a string', path: ['name', 0] }] }
    await store.putUpdate(update(run.id, 'bad', 'rename', 1), 10)
    const rejected = await store.answerUpdate(run.id, 'bad', { status: 'rejected', error, answeredAt: new Date().toISOString() })
    expect(rejected).toMatchObject({ status: 'rejected', error })
    expect(rejected).not.toHaveProperty('result')
    expect(await store.getUpdate(run.id, 'bad')).toEqual(rejected)
  })

  it('hands out copies: changing what a call gave or returned does not change the store', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    const given = update(run.id, 'u', 'n', { list: [1] })
    const put = await store.putUpdate(given, 10)
    ;(given.data as { list: number[] }).list.push(2)
    if (put !== 'full') (put.update.data as { list: number[] }).list.push(3)
    ;((await store.getUpdate(run.id, 'u'))!.data as { list: number[] }).list.push(4)
    ;((await store.listUpdates(run.id))[0].data as { list: number[] }).list.push(5)
    const answer = completed({ list: [1] })
    const answered = (await store.answerUpdate(run.id, 'u', answer))!
    ;(answer.result as { list: number[] }).list.push(6)
    ;(answered.result as { list: number[] }).list.push(7)
    expect(await store.getUpdate(run.id, 'u')).toMatchObject({ data: { list: [1] }, result: { list: [1] } })
  })

  it('lets a run’s updates go with it when the run is pruned', async () => {
    const store = await createStore()
    keepsUpdates(store)
    const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString()
    const run = await store.createRun(makeRun({ status: 'running' }))
    const kept = await store.createRun(makeRun({ status: 'running' }))
    await store.putUpdate(update(run.id, 'x', 'note'), 10)
    await store.putUpdate(update(kept.id, 'x', 'note'), 10)
    await store.updateRun(run.id, { status: 'completed', finishedAt: at(1) })
    expect(await store.pruneFinished('report', at(2), 10)).toBe(1)
    expect(await store.listUpdates(run.id)).toEqual([])
    expect(await store.getUpdate(run.id, 'x')).toBeUndefined()
    expect((await store.listUpdates(kept.id)).map((u) => u.id)).toEqual(['x'])
  })

  it('lets a run’s updates go with it when the run is evicted', async () => {
    const store = await createStore({ maxRuns: 2 })
    keepsUpdates(store)
    const run = await store.createRun(makeRun({ status: 'running' }))
    await store.putUpdate(update(run.id, 'x', 'note'), 10)
    await store.updateRun(run.id, { status: 'completed', finishedAt: new Date().toISOString() })
    await store.createRun(makeRun({ status: 'running' }))
    await store.createRun(makeRun({ status: 'running' }))
    expect(await store.getRun(run.id)).toBeUndefined()
    expect(await store.listUpdates(run.id)).toEqual([])
  })
}

/** Every store of svc keeps updates. */
function keepsUpdates(
  store: RunStore,
): asserts store is RunStore & Required<Pick<RunStore, 'putUpdate' | 'answerUpdate' | 'getUpdate' | 'listUpdates' | 'pruneFinished'>> {
  if (!store.putUpdate || !store.answerUpdate || !store.getUpdate || !store.listUpdates || !store.pruneFinished) {
    throw new Error('every store of svc keeps updates (putUpdate, answerUpdate, getUpdate, listUpdates) and prunes finished runs')
  }
}
