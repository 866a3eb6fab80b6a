/**
 * The RunStore contract. Every implementation runs this suite:
 * `runStoreContract('name', (options) => new SomeStore(options))`, where
 * `options.maxRuns`, when given, is the store's bound.
 */
import { describe, expect, it } from 'vitest'
import { StoreFullError } from '../../src/runtime/errors.ts'
import type { RunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { searchContract } from './search-contract.ts'
import { signalContract } from './signal-contract.ts'
import { updateContract } from './update-contract.ts'

let seq = 0
export function makeRun(overrides: Partial<RunRecord> = {}): RunRecord {
  seq++
  return {
    id: `run-${seq}-${crypto.randomUUID()}`,
    taskName: 'report',
    status: 'running',
    trigger: 'manual',
    input: { n: seq },
    ok: true,
    attempts: [],
    steps: {},
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, seq)).toISOString(),
    ...overrides,
  }
}

export function runStoreContract(name: string, createStore: (options?: { maxRuns: number }) => RunStore | Promise<RunStore>): void {
  describe(`RunStore contract: ${name}`, () => {
    searchContract(createStore, makeRun)
    signalContract(createStore, makeRun)
    updateContract(createStore, makeRun)

    it('creates a run and reads back an equal, JSON-serializable copy', async () => {
      const store = await createStore()
      const run = makeRun()
      const created = await store.createRun(run)
      expect(created).toEqual(run)
      const read = await store.getRun(run.id)
      expect(read).toEqual(run)
      expect(JSON.parse(JSON.stringify(read))).toEqual(run)
      expect(await store.getRun('missing')).toBeUndefined()
    })

    it('changing a returned record does not change the store', async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun(run)
      const read = (await store.getRun(run.id))!
      read.status = 'failed'
      read.attempts.push({ index: 9, startedAt: run.createdAt, durationMs: 1 })
      read.steps.x = { status: 'completed' }
      run.status = 'completed'
      expect(await store.getRun(run.id)).toMatchObject({ status: 'running', attempts: [], steps: {} })
    })

    it('each read hands out steps of its own: changing them does not change the store, and a step saved later does not change them', async () => {
      const store = await createStore()
      const run = makeRun({ steps: { a: { status: 'completed', output: 1 } } })
      await store.createRun(run)
      delete run.steps.a
      const reads = [
        (await store.getRun(run.id))!,
        (await store.listRuns({ taskName: run.taskName })).find((r) => r.id === run.id)!,
        (await store.updateRun(run.id, { ok: true }))!,
      ]
      expect(new Set(reads.map((read) => read.steps)).size).toBe(reads.length)
      for (const read of reads) {
        expect(read.steps).toEqual({ a: { status: 'completed', output: 1 } })
        read.steps.x = { status: 'timed_out' }
        delete read.steps.a
      }
      await store.saveStep(run.id, 'b', { status: 'completed', output: 2 })
      for (const read of reads) expect(read.steps).toEqual({ x: { status: 'timed_out' } })
      const after = (await store.getRun(run.id))!
      expect(after.steps).toEqual({ a: { status: 'completed', output: 1 }, b: { status: 'completed', output: 2 } })
      const cancelled = (await store.updateRun(run.id, { status: 'cancelled' }))!
      await store.saveStep(run.id, 'c', { status: 'completed' })
      expect(Object.keys(cancelled.steps)).toEqual(['a', 'b'])
      expect(Object.keys(after.steps)).toEqual(['a', 'b'])
    })

    it('rejects a second run with the same id', async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun(run)
      await expect(store.createRun({ ...run })).rejects.toThrow()
    })

    it('an idempotency key already held resolves to the existing run of that task', async () => {
      const store = await createStore()
      const first = makeRun({ idempotencyKey: 'k1' })
      await store.createRun(first)
      const again = await store.createRun(makeRun({ idempotencyKey: 'k1' }))
      expect(again.id).toBe(first.id)
      const otherTask = await store.createRun(makeRun({ idempotencyKey: 'k1', taskName: 'other' }))
      expect(otherTask.id).not.toBe(first.id)
      expect(await store.listRuns({ taskName: 'report' })).toHaveLength(1)
    })

    it('updateRun applies a patch, removes fields set to undefined and honours expect', async () => {
      const store = await createStore()
      const run = makeRun({
        status: 'suspended',
        suspended: { stepKey: 's', waitpoint: { type: 'sleep', until: '2030-01-01T00:00:00.000Z' } },
      })
      await store.createRun(run)
      expect(await store.updateRun(run.id, { status: 'completed' }, { status: 'running' })).toBeUndefined()
      const resumed = await store.updateRun(run.id, { status: 'running', suspended: undefined }, { status: ['suspended'] })
      expect(resumed?.status).toBe('running')
      expect(resumed && 'suspended' in resumed).toBe(false)
      expect((await store.getRun(run.id))?.suspended).toBeUndefined()
      expect(await store.updateRun('missing', { status: 'failed' })).toBeUndefined()
    })

    it('appends attempts in order and records steps by key', async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun(run)
      await store.appendAttempt(run.id, { index: 1, startedAt: run.createdAt, durationMs: 3, error: 'boom' })
      await store.appendAttempt(run.id, { index: 2, startedAt: run.createdAt, durationMs: 4 })
      await store.saveStep(run.id, 'a', { status: 'completed', output: { x: 1 } })
      await store.saveStep(run.id, 'b', { status: 'timed_out' })
      const read = (await store.getRun(run.id))!
      expect(read.attempts.map((a) => a.index)).toEqual([1, 2])
      expect(read.attempts[0].error).toBe('boom')
      expect(read.steps).toEqual({ a: { status: 'completed', output: { x: 1 } }, b: { status: 'timed_out' } })
    })

    it('hands back steps in the order they were recorded, whether saved one by one or given with the run', async () => {
      const store = await createStore()
      // Neither sorted nor by length: a store that reorders keys shows here.
      const keys = ['send-welcome', 'a', 'zz-last-but-one', 'b2', 'charge']
      const saved = makeRun()
      await store.createRun(saved)
      for (const key of keys) await store.saveStep(saved.id, key, { status: 'completed', output: key })
      expect(Object.keys((await store.getRun(saved.id))!.steps)).toEqual(keys)
      const given = makeRun({ steps: Object.fromEntries(keys.map((key) => [key, { status: 'completed', output: key }])) })
      expect(Object.keys((await store.createRun(given)).steps)).toEqual(keys)
      await store.saveStep(given.id, 'after', { status: 'completed' })
      expect(Object.keys((await store.getRun(given.id))!.steps)).toEqual([...keys, 'after'])
      expect(Object.keys((await store.listRuns({ limit: 1 }))[0].steps)).toEqual([...keys, 'after'])
    })

    it("keeps a step's timing and kind, the run's logs and trace, and when its suspension began", async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun({
        ...run,
        trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'k=v' },
      })
      const step = { status: 'completed', output: 1, kind: 'run', startedAt: '2026-01-02T03:04:05.678Z', durationMs: 42 } as const
      await store.saveStep(run.id, 'a', step)
      const entry = {
        seq: 1,
        level: 'warn',
        message: 'slow',
        attributes: { n: 1 },
        at: '2026-01-02T03:04:05.700Z',
        attempt: 1,
        step: 'a',
      } as const
      const logs = { kept: [entry], bytes: JSON.stringify(entry).length, calls: 0, dropped: 0 }
      const since = '2026-01-02T03:04:06.000Z'
      await store.updateRun(run.id, {
        logs,
        status: 'suspended',
        suspended: { stepKey: 'nap', waitpoint: { type: 'sleep', until: since }, since },
      })
      const read = (await store.getRun(run.id))!
      expect(read.steps.a).toEqual(step)
      expect(read.logs).toEqual(logs)
      expect(read.trace).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'k=v' })
      expect(read.suspended?.since).toBe(since)
    })

    it('appends the attempt of a patch to attempts in the same update, and only when the update happens', async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun(run)
      await store.appendAttempt(run.id, { index: 1, startedAt: run.createdAt, durationMs: 3, error: 'boom' })
      const attempt = { index: 2, startedAt: run.createdAt, durationMs: 4 }
      const refused = await store.updateRun(run.id, { status: 'failed', attempt }, { status: 'suspended' })
      expect(refused).toBeUndefined()
      expect((await store.getRun(run.id))!.attempts.map((a) => a.index)).toEqual([1])
      const done = await store.updateRun(run.id, { status: 'completed', ok: true, attempt }, { status: 'running' })
      expect(done).toMatchObject({
        status: 'completed',
        attempts: [
          { index: 1, error: 'boom' },
          { index: 2, durationMs: 4 },
        ],
      })
      expect(done && 'attempt' in done).toBe(false)
      // The store kept its own copy of the attempt.
      attempt.durationMs = 99
      const read = (await store.getRun(run.id))!
      expect(read.attempts).toEqual([
        { index: 1, startedAt: run.createdAt, durationMs: 3, error: 'boom' },
        { index: 2, startedAt: run.createdAt, durationMs: 4 },
      ])
      expect('attempt' in read).toBe(false)
    })

    it('lists runs newest first, filtered by task and status, with a limit', async () => {
      const store = await createStore()
      const a = makeRun({ taskName: 'a' })
      const b = makeRun({ taskName: 'b', status: 'completed' })
      const c = makeRun({ taskName: 'a', status: 'completed' })
      for (const run of [a, b, c]) await store.createRun(run)
      expect((await store.listRuns()).map((r) => r.id)).toEqual([c.id, b.id, a.id])
      expect((await store.listRuns({ taskName: 'a' })).map((r) => r.id)).toEqual([c.id, a.id])
      expect((await store.listRuns({ status: 'completed', limit: 1 })).map((r) => r.id)).toEqual([c.id])
      expect((await store.listRuns({ status: ['running', 'suspended'] })).map((r) => r.id)).toEqual([a.id])
    })

    it('pages through runs newest first with a cursor, filters applied on every page', async () => {
      const store = await createStore()
      const runs = Array.from({ length: 7 }, (_, i) => makeRun({ taskName: i % 2 === 0 ? 'even' : 'odd' }))
      for (const run of runs) await store.createRun(run)
      const newestFirst = runs.map((r) => r.id).reverse()
      const pages: string[][] = []
      let cursor: string | undefined
      for (;;) {
        const page = await store.listRuns({ limit: 3, cursor })
        if (page.length === 0) break
        pages.push(page.map((r) => r.id))
        cursor = page[page.length - 1].id
      }
      expect(pages).toEqual([newestFirst.slice(0, 3), newestFirst.slice(3, 6), newestFirst.slice(6)])
      // A run created after the first page shifts nothing on the next one.
      const first = await store.listRuns({ limit: 2 })
      await store.createRun(makeRun())
      const second = await store.listRuns({ limit: 2, cursor: first[1].id })
      expect(second.map((r) => r.id)).toEqual(newestFirst.slice(2, 4))
      const even = runs
        .filter((r) => r.taskName === 'even')
        .map((r) => r.id)
        .reverse()
      const evenFirst = await store.listRuns({ taskName: 'even', limit: 2 })
      expect(evenFirst.map((r) => r.id)).toEqual(even.slice(0, 2))
      expect((await store.listRuns({ taskName: 'even', cursor: evenFirst[1].id })).map((r) => r.id)).toEqual(even.slice(2))
      expect(await store.listRuns({ cursor: 'no-such-run' })).toEqual([])
    })

    it('createRuns inserts a batch, each as createRun would: a held key answers with its run, a live run past the bound is a StoreFullError in its place', async () => {
      const store = await createStore({ maxRuns: 4 })
      expect(store.createRuns).toBeTypeOf('function')
      const held = await store.createRun(makeRun({ status: 'running', idempotencyKey: 'k' }))
      const batch = [
        makeRun({ status: 'running' }),
        makeRun({ status: 'running', idempotencyKey: 'k' }),
        makeRun({ status: 'queued', idempotencyKey: 'j' }),
        makeRun({ status: 'running', idempotencyKey: 'j' }),
        makeRun({ status: 'completed' }),
        makeRun({ status: 'running' }),
        makeRun({ status: 'scheduled', runAt: '2099-01-01T00:00:00.000Z' }),
      ]
      const stored = await store.createRuns!(batch)
      expect(stored).toHaveLength(batch.length)
      expect(stored[0]).toEqual(batch[0])
      // Held before the batch, and held by an earlier item of the batch.
      expect((stored[1] as RunRecord).id).toBe(held.id)
      expect(stored[2]).toEqual(batch[2])
      expect((stored[3] as RunRecord).id).toBe(batch[2].id)
      expect(stored[4]).toEqual(batch[4])
      // Live runs: held, 0 and 2 make three; 5 takes the last place and 6 finds the store full.
      expect(stored[5]).toEqual(batch[5])
      expect(stored[6]).toBeInstanceOf(StoreFullError)
      expect(await store.getRun(batch[6].id)).toBeUndefined()
      // The finished run went with the bound (finished runs are evicted past it), the live ones stay.
      for (const i of [0, 2, 5]) expect(await store.getRun(batch[i].id)).toEqual(batch[i])
      expect(await store.createRuns!([])).toEqual([])
    })

    it("keeps a run's version and its migrations, and lists the runs of a version", async () => {
      const store = await createStore()
      const [v1, v2, none] = [makeRun({ version: 'v1' }), makeRun({ version: 'v2' }), makeRun()]
      for (const run of [v1, v2, none]) await store.createRun(run)
      expect((await store.listRuns({ version: 'v1' })).map((run) => run.id)).toEqual([v1.id])
      const migrations = [{ from: 'v1', to: 'v2', at: '2025-01-01T00:00:00.000Z' }]
      expect(await store.updateRun(v1.id, { version: 'v2', migrations })).toMatchObject({ version: 'v2', migrations })
      expect((await store.listRuns({ version: 'v2' })).map((run) => run.id)).toEqual([v2.id, v1.id])
      expect((await store.listRuns({ version: 'v2', limit: 1 })).map((run) => run.id)).toEqual([v2.id])
      expect(await store.listRuns({ version: 'v1' })).toEqual([])
      expect((await store.getRun(none.id))?.version).toBeUndefined()
    })

    it('lists the runs suspended on an event of a name (waitingForEvent), newest first, paged, and none once they resume', async () => {
      const store = await createStore()
      const onEvent = (name: string) =>
        makeRun({
          status: 'suspended',
          suspended: { stepKey: 'paid', waitpoint: { type: 'event', name, since: '2025-01-01T00:00:00.000Z', tokenId: `t-${seq}` } },
        })
      const paid = [onEvent('order.paid'), onEvent('order.paid'), onEvent('order.paid')]
      const others = [
        onEvent('order.refunded'),
        makeRun({ status: 'suspended', suspended: { stepKey: 'nap', waitpoint: { type: 'sleep', until: '2025-01-02T00:00:00.000Z' } } }),
        makeRun({ status: 'running' }),
      ]
      for (const run of [paid[0], others[0], paid[1], others[1], paid[2], others[2]]) await store.createRun(run)
      const ids = (runs: RunRecord[]) => runs.map((r) => r.id)
      expect(ids(await store.listRuns({ waitingForEvent: 'order.paid' }))).toEqual(ids(paid).reverse())
      const first = await store.listRuns({ status: 'suspended', waitingForEvent: 'order.paid', limit: 2 })
      expect(ids(first)).toEqual([paid[2].id, paid[1].id])
      expect(ids(await store.listRuns({ waitingForEvent: 'order.paid', limit: 2, cursor: first[1].id }))).toEqual([paid[0].id])
      expect(await store.listRuns({ waitingForEvent: 'order.shipped' })).toEqual([])
      // Resumed, it waits no more.
      await store.updateRun(paid[1].id, { status: 'running', suspended: undefined }, { status: 'suspended' })
      expect(ids(await store.listRuns({ waitingForEvent: 'order.paid' }))).toEqual([paid[2].id, paid[0].id])
      // A cursor that waits no more still marks the place.
      expect(ids(await store.listRuns({ waitingForEvent: 'order.paid', cursor: paid[1].id }))).toEqual([paid[0].id])
      // Suspended again on another event, it is listed under that one only.
      const shipped = {
        stepKey: 'shipped',
        waitpoint: { type: 'event' as const, name: 'order.shipped', since: '2025-01-01T00:00:00.000Z', tokenId: 't-x' },
      }
      await store.updateRun(paid[1].id, { status: 'suspended', suspended: shipped }, { status: 'running' })
      expect(ids(await store.listRuns({ waitingForEvent: 'order.shipped' }))).toEqual([paid[1].id])
      expect(ids(await store.listRuns({ waitingForEvent: 'order.paid' }))).toEqual([paid[2].id, paid[0].id])
      await store.updateRun(paid[1].id, { status: 'cancelled', suspended: undefined })
      expect(await store.listRuns({ waitingForEvent: 'order.shipped' })).toEqual([])
    })

    it('cancelled is a finished status: it frees room for live runs, is evicted like other finished runs, and keeps its steps', async () => {
      const store = await createStore({ maxRuns: 2 })
      const sleeping = makeRun({ status: 'suspended', steps: { a: { status: 'completed', output: 1 } } })
      const other = makeRun({ status: 'running' })
      await store.createRun(sleeping)
      await store.createRun(other)
      await expect(store.createRun(makeRun())).rejects.toBeInstanceOf(StoreFullError)
      const finishedAt = new Date().toISOString()
      const cancelled = await store.updateRun(
        sleeping.id,
        { status: 'cancelled', finishedAt },
        { status: ['scheduled', 'running', 'suspended'] },
      )
      expect(cancelled).toMatchObject({ status: 'cancelled', finishedAt, steps: { a: { status: 'completed', output: 1 } } })
      expect((await store.listRuns({ status: 'cancelled' })).map((r) => r.id)).toEqual([sleeping.id])
      // A finished run is never moved again by a compare-and-set that expects a live status.
      expect(await store.updateRun(sleeping.id, { status: 'running' }, { status: ['scheduled', 'running', 'suspended'] })).toBeUndefined()
      const admitted = makeRun()
      await store.createRun(admitted)
      expect(await store.getRun(sleeping.id)).toBeUndefined()
      expect((await store.listRuns()).map((r) => r.id).sort()).toEqual([other.id, admitted.id].sort())
    })

    it('pruneFinished deletes, of the first runs of a task to finish, those that finished before a moment, and nothing live', async () => {
      const store = await createStore()
      if (!store.pruneFinished) throw new Error('every store prunes finished runs')
      const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString()
      // Finished in this order: minutes 1, 2, 3 of "report", one of "other" at minute 1.
      const old = [makeRun({ idempotencyKey: 'k-old' }), makeRun({ steps: { a: { status: 'completed', output: 1 } } }), makeRun()]
      const other = makeRun({ taskName: 'other' })
      const live = makeRun({ status: 'suspended' })
      for (const run of [...old, other, live]) await store.createRun(run)
      await store.putToken({ id: `tok-${old[0].id}`, runId: old[0].id, stepKey: 'a', status: 'waiting', createdAt: at(0) })
      await store.updateRun(old[0].id, { status: 'completed', finishedAt: at(1) })
      await store.updateRun(other.id, { status: 'completed', finishedAt: at(1) })
      await store.updateRun(old[1].id, { status: 'failed', ok: false, finishedAt: at(2) })
      await store.updateRun(old[2].id, { status: 'cancelled', ok: false, finishedAt: at(3) })

      expect(await store.pruneFinished('report', at(1), 10)).toBe(0)
      // Of the first run to finish (the limit), the one before minute 3.
      expect(await store.pruneFinished('report', at(3), 1)).toBe(1)
      expect(await store.getRun(old[0].id)).toBeUndefined()
      expect(await store.getToken(`tok-${old[0].id}`)).toBeUndefined()
      expect(await store.getRun(old[1].id)).toBeDefined()
      // The key went with its run: a new run may take it.
      const again = makeRun({ idempotencyKey: 'k-old' })
      expect((await store.createRun(again)).id).toBe(again.id)
      expect(await store.pruneFinished('report', at(60), 10)).toBe(2)
      expect(await store.getRun(old[1].id)).toBeUndefined()
      // Other tasks and live runs stay.
      expect((await store.listRuns()).map((run) => run.id).sort()).toEqual([other.id, live.id, again.id].sort())
      expect(await store.pruneFinished('report', at(60), 10)).toBe(0)
      expect((await store.countRunsByTask(['completed', 'failed', 'cancelled'])).map((count) => count.taskName)).toEqual(['other'])
    })

    it('countRunsByTask counts the runs of each task in a status, and follows their changes', async () => {
      const store = await createStore()
      const byName = (counts: { taskName: string; count: number }[]) => [...counts].sort((x, y) => (x.taskName < y.taskName ? -1 : 1))
      const made: RunRecord[] = []
      for (const [taskName, status] of [
        ['a', 'queued'],
        ['a', 'queued'],
        ['constructor', 'queued'],
        ['a', 'running'],
        ['c', 'completed'],
        ['constructor', 'scheduled'],
      ] as const) {
        made.push(await store.createRun(makeRun({ taskName, status })))
      }
      expect(byName(await store.countRunsByTask('queued'))).toEqual([
        { taskName: 'a', count: 2 },
        { taskName: 'constructor', count: 1 },
      ])
      expect(byName(await store.countRunsByTask(['queued', 'scheduled']))).toEqual([
        { taskName: 'a', count: 2 },
        { taskName: 'constructor', count: 2 },
      ])
      expect(await store.countRunsByTask('failed')).toEqual([])
      expect(await store.countRunsByTask([])).toEqual([])
      await store.updateRun(made[0].id, { status: 'running' })
      expect(byName(await store.countRunsByTask('queued'))).toEqual([
        { taskName: 'a', count: 1 },
        { taskName: 'constructor', count: 1 },
      ])
    })

    it('keeps the chunks a patch writes, and keeps them through later patches and steps (ctx.stream)', async () => {
      const store = await createStore()
      const run = makeRun({ status: 'running' })
      await store.createRun(run)
      const at = '2025-01-01T00:00:00.000Z'
      const chunks = { kept: [{ seq: 1, name: 'text', data: { t: 'hé' }, at }], bytes: 11, calls: 1 }
      expect((await store.updateRun(run.id, { chunks }, { status: 'running' }))?.chunks).toEqual(chunks)
      const more = { kept: [...chunks.kept, { seq: 2, name: 'text', data: 'llo', at }], bytes: 16, calls: 2 }
      await store.updateRun(run.id, { chunks: more }, { status: 'running' })
      await store.saveStep(run.id, 'a', { status: 'completed', output: 1 })
      const done = await store.updateRun(run.id, { status: 'completed', ok: true, result: 'x' }, { status: 'running' })
      expect(done?.chunks).toEqual(more)
      // A run no longer running takes none.
      expect(await store.updateRun(run.id, { chunks }, { status: 'running' })).toBeUndefined()
      expect((await store.getRun(run.id))?.chunks).toEqual(more)
    })

    it('keeps runtime schedules: one per task and key, the first id kept, listed oldest first by task or key, deleted once', async () => {
      const store = await createStore()
      if (!store.putSchedule) return
      const base = { cron: '0 * * * *', timezone: null, enabled: true, nextAt: null, updatedAt: '2025-01-01T00:00:00.000Z' }
      const at = (n: number) => `2025-01-01T00:00:0${n}.000Z`
      const a = await store.putSchedule({ ...base, id: 's-a', task: 'report', key: 'acme', input: { n: 1 }, createdAt: at(1) })
      const b = await store.putSchedule({ ...base, id: 's-b', task: 'report', createdAt: at(2) })
      const c = await store.putSchedule({ ...base, id: 's-c', task: 'digest', key: 'acme', createdAt: at(3) })
      // The same task and key again: the first schedule changes, its id and creation kept.
      const again = await store.putSchedule({ ...base, id: 's-d', task: 'report', key: 'acme', cron: '5 * * * *', createdAt: at(4) })
      expect(again).toMatchObject({ id: 's-a', createdAt: at(1), cron: '5 * * * *', key: 'acme' })
      expect(again.input).toBeUndefined()
      expect((await store.listSchedules!({})).map((s) => s.id)).toEqual([a.id, b.id, c.id])
      expect((await store.listSchedules!({ task: 'report' })).map((s) => s.id)).toEqual([a.id, b.id])
      expect((await store.listSchedules!({ key: 'acme' })).map((s) => s.id)).toEqual([a.id, c.id])
      expect(await store.getSchedule!('s-a')).toEqual(again)
      expect(await store.getSchedule!('s-d')).toBeUndefined()
      expect(await store.deleteSchedule!('s-b')).toBe(true)
      expect(await store.deleteSchedule!('s-b')).toBe(false)
      expect((await store.listSchedules!({})).map((s) => s.id)).toEqual([a.id, c.id])
    })

    it('keeps the replayOf and trigger of a replayed run', async () => {
      const store = await createStore()
      const source = makeRun({ status: 'failed' })
      const replay = makeRun({ trigger: 'replay', replayOf: source.id })
      await store.createRun(source)
      await store.createRun(replay)
      expect(await store.getRun(replay.id)).toMatchObject({ trigger: 'replay', replayOf: source.id })
      expect((await store.listRuns({ limit: 1 }))[0]).toMatchObject({ id: replay.id, trigger: 'replay', replayOf: source.id })
    })

    it('a timer is taken exactly once', async () => {
      const store = await createStore()
      const timer = { id: 't1', runId: 'r1', kind: 'sleep' as const, dueAt: '2030-01-01T00:00:00.000Z', stepKey: 's' }
      await store.saveTimer(timer)
      expect(await store.listTimers()).toEqual([timer])
      expect(await store.takeTimer('t1')).toEqual(timer)
      expect(await store.takeTimer('t1')).toBeUndefined()
      expect(await store.listTimers()).toEqual([])
    })

    it("dropTimersOf removes every timer of one run, and only that run's, and names them", async () => {
      const store = await createStore()
      // Every store svc ships has it; one without it is the engine's fallback (waitpoints.ts).
      expect(store.dropTimersOf).toBeTypeOf('function')
      const due = '2030-01-01T00:00:00.000Z'
      const mine = [
        { id: 'a', runId: 'r1', kind: 'sleep' as const, dueAt: due, stepKey: 's' },
        { id: 'b', runId: 'r1', kind: 'token-timeout' as const, dueAt: due, stepKey: 't', tokenId: 'tok' },
      ]
      const other = { id: 'c', runId: 'r2', kind: 'sleep' as const, dueAt: due, stepKey: 's' }
      for (const timer of [...mine, other]) await store.saveTimer(timer)
      expect((await store.dropTimersOf!('r1')).sort()).toEqual(['a', 'b'])
      expect(await store.listTimers()).toEqual([other])
      expect(await store.dropTimersOf!('r1')).toEqual([])
    })

    it('refuses a new live run with StoreFullError once live runs reach the bound, and evicts none of them', async () => {
      const store = await createStore({ maxRuns: 3 })
      const live = [makeRun({ status: 'scheduled' }), makeRun({ status: 'running' }), makeRun({ status: 'suspended' })]
      for (const run of live) await store.createRun(run)
      const refused = makeRun({ status: 'scheduled', idempotencyKey: 'k-full' })
      const error = await store.createRun(refused).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StoreFullError)
      expect(error).toMatchObject({ code: 'STORE_FULL', status: 503 })
      expect((error as Error).message).toMatch(/is full: 3 runs are live .*maxRuns/)
      expect(await store.getRun(refused.id)).toBeUndefined()
      for (const run of live) expect(await store.getRun(run.id)).toMatchObject({ id: run.id, status: run.status })
      expect(await store.listRuns()).toHaveLength(3)
      // The refused run held no key: once there is room, a run with it is new.
      await store.updateRun(live[1].id, { status: 'completed' })
      const admitted = await store.createRun(makeRun({ idempotencyKey: 'k-full' }))
      expect(admitted.id).not.toBe(refused.id)
      expect((await store.listRuns()).map((r) => r.id).sort()).toEqual([live[0].id, live[2].id, admitted.id].sort())
    })

    it('a full store still answers an idempotency key it holds with that run', async () => {
      const store = await createStore({ maxRuns: 1 })
      const held = makeRun({ idempotencyKey: 'held' })
      await store.createRun(held)
      expect((await store.createRun(makeRun({ idempotencyKey: 'held' }))).id).toBe(held.id)
      await expect(store.createRun(makeRun())).rejects.toBeInstanceOf(StoreFullError)
    })

    it('putToken keeps an existing token and settleToken settles it once', async () => {
      const store = await createStore()
      const run = makeRun()
      await store.createRun(run)
      const token = { id: 'tok', runId: run.id, stepKey: 'w', status: 'waiting' as const, createdAt: run.createdAt }
      expect(await store.putToken(token)).toEqual(token)
      const first = await store.settleToken('tok', 'completed', { ok: 1 })
      expect(first?.settled).toBe(true)
      expect(first?.token).toMatchObject({ status: 'completed', payload: { ok: 1 } })
      expect((await store.putToken(token)).status).toBe('completed')
      const second = await store.settleToken('tok', 'timed_out')
      expect(second).toMatchObject({ settled: false, token: { status: 'completed' } })
      expect(await store.settleToken('nope', 'completed')).toBeUndefined()
      expect((await store.getToken('tok'))?.payload).toEqual({ ok: 1 })
    })
  })
}
