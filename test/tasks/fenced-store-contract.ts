/**
 * The rules of a fenced store (`RunStore.fences`, src/runtime/tasks/store/store.ts):
 * once another process took a run over, or cancelled it, every write of the
 * attempt that held it changes nothing and rejects with `LeaseLostError`;
 * what is written for a run outside its attempt (a cancel, a met wait) is
 * not fenced. Every store that sets `fences` runs it, with two stores on
 * one database standing for two processes. How a process comes to hold a
 * run, and how another takes it over, differ by store (a lease its engine
 * takes, or the write that made the run running): the harness says.
 * The lease-specific rules of `SharedWork` are in shared-work-contract.ts.
 */
import { describe, expect, it } from 'vitest'
import { LeaseLostError } from '../../src/runtime/errors.ts'
import { LIVE_STATUSES, type RunStore } from '../../src/runtime/tasks/store/store.ts'
import { makeRun } from './store-contract.ts'

/** Two stores on one fresh database, as two processes would open it, and what each store does to claim. */
export interface FencedStores {
  a: RunStore
  b: RunStore
  /**
   * What `store`'s process does when it dispatches the running run `id` to
   * an attempt, before the attempt writes: takes its lease, or nothing where
   * the write that made the run running made it the store's.
   */
  hold(store: RunStore, id: string): Promise<void>
  /**
   * What `store`'s process does once the attempt of run `id` is over (the
   * run suspended or finished): gives up its lease, or nothing where
   * writing the run out of `running` let it go.
   */
  release(store: RunStore, id: string): Promise<void>
  /** `b` takes over these runs, which `a` holds, as once `a`'s process stalled; resolves once `b` holds exactly these. */
  takeOver(...ids: string[]): Promise<void>
  /** The run's fence as the database keeps it. */
  fence(id: string): Promise<number>
  /**
   * The app's table on the same database, for a store with `transactStep`:
   * `insert` writes an id into it through a step's `tx` (a value, or a
   * promise where the store allows one), `ids` reads it back.
   */
  app?: { insert(tx: unknown, id: string): unknown; ids(): Promise<string[]> }
}

const LOST = { code: 'LEASE_LOST' }
const isoNow = () => new Date().toISOString()
const attempt = { index: 1, startedAt: '2025-01-01T00:00:00.000Z', durationMs: 1, error: 'boom' }

export function fencedStoreContract(name: string, open: () => FencedStores | Promise<FencedStores>): void {
  describe(`fenced store contract: ${name}`, () => {
    it('every write of an attempt whose run another process took over changes nothing and rejects with LeaseLostError', async () => {
      const { a, b, hold, takeOver } = await open()
      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      await a.saveStep('r', 'one', { status: 'completed', output: 'by a' })
      // Read here, so that a store that caches rows holds this one when the other takes the run.
      expect(await a.getRun('r')).toMatchObject({ status: 'running' })
      await takeOver('r')

      const lost = a.saveStep('r', 'two', { status: 'completed', output: 'by a' })
      await expect(lost).rejects.toBeInstanceOf(LeaseLostError)
      await expect(lost).rejects.toMatchObject({ ...LOST, runId: 'r' })
      await expect(a.saveStep('r', 'one', { status: 'completed', output: 'by a again' })).rejects.toMatchObject(LOST)
      await expect(a.appendAttempt('r', attempt)).rejects.toMatchObject(LOST)
      await expect(a.updateRun('r', { status: 'completed', ok: true, result: 'by a' }, { status: 'running' })).rejects.toMatchObject(LOST)
      await expect(a.updateRun('r', { status: 'suspended' }, { status: ['running'] })).rejects.toMatchObject(LOST)
      await expect(a.createRun(makeRun({ id: 'kid', status: 'running', parentRunId: 'r' }))).rejects.toMatchObject(LOST)
      await expect(a.debounceRun(makeRun({ id: 'kid2', status: 'scheduled', parentRunId: 'r' }), undefined)).rejects.toMatchObject(LOST)
      await expect(a.putToken({ id: 'r:w', runId: 'r', stepKey: 'w', status: 'waiting', createdAt: isoNow() })).rejects.toMatchObject(LOST)
      for (const kind of ['sleep', 'token-timeout', 'retry'] as const) {
        await expect(a.saveTimer({ id: `r:${kind}`, runId: 'r', kind, stepKey: 'w', dueAt: isoNow() })).rejects.toMatchObject(LOST)
      }

      const run = (await b.getRun('r'))!
      expect(run).toMatchObject({ status: 'running', attempts: [], steps: { one: { status: 'completed', output: 'by a' } } })
      expect(Object.keys(run.steps)).toEqual(['one'])
      expect(await b.getRun('kid')).toBeUndefined()
      expect(await b.getRun('kid2')).toBeUndefined()
      expect(await b.getToken('r:w')).toBeUndefined()
      expect(await b.listTimers()).toEqual([])
      expect(await a.getRun('r')).toEqual(run)

      // The process that took it over writes as before.
      await b.saveStep('r', 'two', { status: 'completed', output: 'by b' })
      expect((await b.createRun(makeRun({ id: 'kid', status: 'running', parentRunId: 'r' }))).id).toBe('kid')
      await b.appendAttempt('r', attempt)
      expect(await b.updateRun('r', { status: 'completed', ok: true, result: 'by b' }, { status: 'running' })).toMatchObject({
        status: 'completed',
        result: 'by b',
        attempts: [attempt],
        steps: { one: { output: 'by a' }, two: { output: 'by b' } },
      })
    })

    it("a transactional step of an attempt whose run another process took over commits neither the app's writes nor the record", async () => {
      const { a, b, hold, takeOver, app } = await open()
      if (!app || !a.transactStep) return expect(app).toBeUndefined()
      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      const record = () => ({ status: 'completed' as const, kind: 'transaction' as const })
      await a.transactStep('r', 'first', (tx) => app.insert(tx, 'by a'), record)
      await takeOver('r')
      const lost = a.transactStep('r', 'second', (tx) => app.insert(tx, 'by a, too late'), record)
      await expect(lost).rejects.toMatchObject({ ...LOST, runId: 'r' })
      expect(await app.ids()).toEqual(['by a'])
      expect(Object.keys((await b.getRun('r'))!.steps)).toEqual(['first'])
      await b.transactStep!('r', 'second', (tx) => app.insert(tx, 'by b'), record)
      expect((await app.ids()).sort()).toEqual(['by a', 'by b'])
    })

    it('a store writes a run it does not hold unfenced, and a run whose attempt ended takes its later writes', async () => {
      const { a, b, hold } = await open()
      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      // b holds nothing of r: its writes are what they always were.
      await b.saveStep('r', 'one', { status: 'completed' })
      await b.appendAttempt('r', attempt)
      // a's attempt ends the run; what a writes for it afterwards is no attempt's.
      expect(await a.updateRun('r', { status: 'completed', ok: true }, { status: 'running' })).toMatchObject({ status: 'completed' })
      await a.saveStep('r', 'late', { status: 'completed' })
      expect(Object.keys((await b.getRun('r'))!.steps)).toEqual(['one', 'late'])
    })

    it('cancel wins from any process, and ends the right of the attempt in flight to write', async () => {
      const { a, b, hold, takeOver } = await open()
      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      expect(await b.updateRun('r', { status: 'cancelled', ok: false }, { status: LIVE_STATUSES })).toMatchObject({ status: 'cancelled' })
      await expect(a.saveStep('r', 'one', { status: 'completed' })).rejects.toMatchObject(LOST)
      await expect(a.updateRun('r', { status: 'completed', ok: true }, { status: 'running' })).rejects.toMatchObject(LOST)
      expect(await a.getRun('r')).toMatchObject({ status: 'cancelled', steps: {} })

      // A process whose run was taken over still cancels it.
      await a.createRun(makeRun({ id: 's', status: 'running' }))
      await hold(a, 's')
      await takeOver('s')
      expect(await a.updateRun('s', { status: 'cancelled', ok: false }, { status: LIVE_STATUSES })).toMatchObject({ status: 'cancelled' })
      await expect(b.saveStep('s', 'one', { status: 'completed' })).rejects.toMatchObject(LOST)
    })

    it('a suspended run is resumed by whichever process meets its wait, whose attempt then holds it', async () => {
      const { a, b, hold, release, takeOver } = await open()
      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      await takeOver('r')
      const suspended = { stepKey: 'w', waitpoint: { type: 'token' as const, tokenId: 'r:w' } }
      expect(await b.updateRun('r', { status: 'suspended', suspended }, { status: 'running' })).toMatchObject({ status: 'suspended' })
      await release(b, 'r')
      // The token is completed on a, whose fence of r is stale: the waited step lands, no other.
      await a.saveStep('r', 'w', { status: 'completed', output: 'yes', kind: 'waitForToken' })
      await expect(a.saveStep('r', 'other', { status: 'completed' })).rejects.toMatchObject(LOST)
      expect(await a.updateRun('r', { status: 'running', suspended: undefined }, { status: 'suspended' })).toMatchObject({
        status: 'running',
        steps: { w: { output: 'yes' } },
      })
      // a dispatches the resumed run: its attempt writes.
      await hold(a, 'r')
      await a.saveStep('r', 'after', { status: 'completed' })
      expect(await a.updateRun('r', { status: 'completed', ok: true }, { status: 'running' })).toMatchObject({ status: 'completed' })
    })

    it('each claim and each cancel moves the fence on; a suspend or a retry does not', async () => {
      const { a, b, fence, hold, takeOver } = await open()
      await a.createRun(makeRun({ id: 'q', status: 'queued' }))
      const queued = await fence('q')
      await a.startQueued('report', { concurrency: { limit: 1 } }, isoNow())
      expect(await fence('q')).toBe(queued + 1)
      await a.updateRun('q', { status: 'completed', ok: true }, { status: 'running' })

      await a.createRun(makeRun({ id: 'r', status: 'running' }))
      await hold(a, 'r')
      const held = await fence('r')
      // A retry keeps the run running, and its fence.
      await a.updateRun('r', { status: 'running' }, { status: 'running' })
      expect(await fence('r')).toBe(held)
      await takeOver('r')
      expect(await fence('r')).toBe(held + 1)
      await b.updateRun('r', { status: 'suspended' }, { status: 'running' })
      expect(await fence('r')).toBe(held + 1)
      await b.updateRun('r', { status: 'running' }, { status: 'suspended' })
      expect(await fence('r')).toBe(held + 2)
      await b.updateRun('r', { status: 'cancelled' }, { status: LIVE_STATUSES })
      expect(await fence('r')).toBe(held + 3)

      // A delayed run made running.
      await a.createRun(makeRun({ id: 'd', status: 'scheduled' }))
      const scheduled = await fence('d')
      await a.updateRun('d', { status: 'running' }, { status: 'scheduled' })
      expect(await fence('d')).toBe(scheduled + 1)
    })
  })
}
