/**
 * The signals part of the RunStore contract (`putSignal`, `takeSignal`,
 * `listSignals`; types/signals.ts), run by `runStoreContract` on every
 * store that keeps signals.
 */
import { expect, it } from 'vitest'
import type { RunStore, TokenRecord } from '../../src/runtime/tasks/index.ts'
import type { RunRecord, SignalRecord } from '../../src/types.ts'

export function signalContract(
  createStore: (options?: { maxRuns: number }) => RunStore | Promise<RunStore>,
  makeRun: (overrides?: Partial<RunRecord>) => RunRecord,
): void {
  const signal = (runId: string, id: string, name: string, data?: unknown): SignalRecord => ({
    id,
    runId,
    name,
    sentAt: new Date().toISOString(),
    ...(data === undefined ? {} : { data }),
  })
  const wait = (runId: string, stepKey: string, extra: Partial<TokenRecord> = {}): TokenRecord => ({
    id: `${runId}:${stepKey}:signal`,
    runId,
    stepKey,
    status: 'waiting',
    kind: 'signal',
    createdAt: new Date().toISOString(),
    ...extra,
  })

  it('keeps a signal once per id and up to a bound of untaken ones, and lists them oldest first', async () => {
    const store = await createStore()
    keepsSignals(store)
    const run = await store.createRun(makeRun({ status: 'suspended' }))
    const other = await store.createRun(makeRun({ status: 'suspended' }))
    const kept = signal(run.id, 'a', 'approval', { ok: true })
    expect(await store.putSignal(kept, 2)).toEqual({ signal: kept, kept: true })
    const again = await store.putSignal(signal(run.id, 'a', 'approval', { ok: false }), 2)
    expect(again).toMatchObject({ kept: false, signal: { id: 'a', data: { ok: true } } })
    expect(await store.putSignal(signal(run.id, 'b', 'note'), 2)).toMatchObject({ kept: true })
    expect(await store.putSignal(signal(run.id, 'c', 'note'), 2)).toBe('full')
    // The bound is per run, and an id is unique within its run only.
    expect(await store.putSignal(signal(other.id, 'a', 'approval'), 2)).toMatchObject({ kept: true })
    expect((await store.listSignals(run.id)).map((s) => s.id)).toEqual(['a', 'b'])
    expect(await store.listSignals('no-such-run')).toEqual([])
  })

  it('takes the oldest untaken signal of the name into a waiting token, once, and none into a settled one', async () => {
    const store = await createStore()
    keepsSignals(store)
    const run = await store.createRun(makeRun({ status: 'suspended' }))
    const first = await store.putToken(wait(run.id, 'one'))
    // Nothing to take: the token stays waiting.
    expect(await store.takeSignal(first.id, 'approval')).toMatchObject({ status: 'waiting' })
    await store.putSignal(signal(run.id, 's1', 'approval', 1), 10)
    await store.putSignal(signal(run.id, 's2', 'other', 2), 10)
    await store.putSignal(signal(run.id, 's3', 'approval', 3), 10)
    const taken = await store.takeSignal(first.id, 'approval')
    expect(taken).toMatchObject({ status: 'completed', payload: { id: 's1', name: 'approval', data: 1 } })
    expect(taken?.settledAt).toEqual(expect.any(String))
    // Taken again: the token is settled, and nothing more is taken.
    expect((await store.takeSignal(first.id, 'approval'))?.payload).toMatchObject({ id: 's1' })
    const second = await store.putToken(wait(run.id, 'two'))
    expect((await store.takeSignal(second.id, 'approval'))?.payload).toMatchObject({ id: 's3', data: 3 })
    // A timed-out wait takes none.
    const late = await store.putToken(wait(run.id, 'late'))
    await store.settleToken(late.id, 'timed_out')
    expect(await store.takeSignal(late.id, 'other')).toMatchObject({ status: 'timed_out' })
    expect(await store.takeSignal('no-such-token', 'other')).toBeUndefined()
    const listed = await store.listSignals(run.id)
    expect(listed.map((s) => [s.id, s.takenBy])).toEqual([
      ['s1', first.id],
      ['s2', undefined],
      ['s3', second.id],
    ])
    // What was taken no longer counts against the bound.
    expect(await store.putSignal(signal(run.id, 's4', 'other'), 2)).toMatchObject({ kept: true })
  })

  it('gives one signal to one of two waits that take it at once', async () => {
    const store = await createStore()
    keepsSignals(store)
    const run = await store.createRun(makeRun({ status: 'suspended' }))
    const a = await store.putToken(wait(run.id, 'a'))
    const b = await store.putToken(wait(run.id, 'b'))
    await store.putSignal(signal(run.id, 'only', 'go'), 10)
    const [ta, tb] = await Promise.all([store.takeSignal(a.id, 'go'), store.takeSignal(b.id, 'go')])
    expect([ta?.status, tb?.status].sort()).toEqual(['completed', 'waiting'])
    expect((await store.listSignals(run.id))[0].takenBy).toBe(ta?.status === 'completed' ? a.id : b.id)
  })

  it('lets a run’s signals go with it when the run is pruned', async () => {
    const store = await createStore()
    keepsSignals(store)
    const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString()
    const run = await store.createRun(makeRun({ status: 'suspended' }))
    await store.putSignal(signal(run.id, 'x', 'note'), 10)
    await store.updateRun(run.id, { status: 'completed', finishedAt: at(1) })
    expect(await store.pruneFinished('report', at(2), 10)).toBe(1)
    expect(await store.listSignals(run.id)).toEqual([])
  })
}

/** Every store of svc keeps signals. */
function keepsSignals(
  store: RunStore,
): asserts store is RunStore & Required<Pick<RunStore, 'putSignal' | 'takeSignal' | 'listSignals' | 'pruneFinished'>> {
  if (!store.putSignal || !store.takeSignal || !store.listSignals || !store.pruneFinished) {
    throw new Error('every store of svc keeps signals (putSignal, takeSignal, listSignals) and prunes finished runs')
  }
}
