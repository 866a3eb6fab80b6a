/**
 * The SharedWork contract (src/runtime/tasks/store/store.ts): how processes that
 * share one store split due timers, running attempts and cron ticks, how
 * the leases on attempts fence their writes, and how run changes reach the
 * other processes. Every store with `shared` runs it:
 *
 * ```ts
 * sharedWorkContract('SomeStore', () => {
 *   const database = freshDatabase()
 *   return (options) => new SomeStore({ database, ...options })
 * })
 * ```
 *
 * Each call of the outer function is a fresh database; each call of the
 * function it returns opens a store on it, which stands for one process,
 * with `leaseMs` when given. Owners are named for the store they claim
 * through, as one engine per process is. The rules every fenced store
 * shares, with or without `shared`, are in fenced-store-contract.ts.
 */
import { describe, expect, it } from 'vitest'
import type { RunStore, SharedWork } from '../../src/runtime/tasks/store/store.ts'
import type { RunChange } from '../../src/types.ts'
import { LIVE_STATUSES } from '../../src/runtime/tasks/store/store.ts'
import { sleep, until } from './_helpers.ts'
import { makeRun } from './store-contract.ts'

export type SharedStore = RunStore & { readonly shared: SharedWork }
export type OpenSharedStore = (options?: { leaseMs?: number }) => SharedStore

const LOST = { code: 'LEASE_LOST' }
const FAR = '2099-01-01T00:00:00.000Z'
const isoNow = () => new Date().toISOString()
const ago = (ms: number) => new Date(Date.now() - ms).toISOString()

export function sharedWorkContract(name: string, database: () => OpenSharedStore | Promise<OpenSharedStore>): void {
  describe(`SharedWork contract: ${name}`, () => {
    describe('due timers', () => {
      it('each due timer is claimed by one store; a timer not yet due, or under a live claim, by none', async () => {
        const open = await database()
        const stores = [open(), open(), open()]
        const past = ago(1000)
        for (let i = 0; i < 60; i++) await stores[0].saveTimer({ id: `t${i}`, runId: `r${i}`, kind: 'sleep', stepKey: 'nap', dueAt: past })
        await stores[0].saveTimer({ id: 'later', runId: 'r', kind: 'sleep', stepKey: 'nap', dueAt: FAR })
        const now = isoNow()
        const claims = await Promise.all(
          stores.flatMap((s, i) => Array.from({ length: 4 }, () => s.shared.claimDueTimers(`owner${i}`, now, 10))),
        )
        const ids = claims.flat().map((timer) => timer.id)
        expect(ids.sort()).toEqual(Array.from({ length: 60 }, (_, i) => `t${i}`).sort())
        // Claimed, not gone: another owner cannot take them while the claims live.
        expect(await stores[1].shared.claimDueTimers('other', now, 100)).toEqual([])
        expect(await stores[1].shared.claimTimer('other', 't0')).toBeUndefined()
        expect(await stores[1].shared.nextDueAt()).toBe(FAR)
      })

      it('claims at most limit timers, the earliest first, and nextDueAt names the earliest unclaimed one', async () => {
        const s = (await database())()
        expect(await s.shared.nextDueAt()).toBeUndefined()
        const due = [ago(1000), ago(3000), ago(2000)]
        for (const [i, dueAt] of due.entries()) await s.saveTimer({ id: `t${i}`, runId: `r${i}`, kind: 'retry', dueAt })
        expect(await s.shared.nextDueAt()).toBe(due[1])
        const first = await s.shared.claimDueTimers('a', isoNow(), 2)
        expect(first.map((timer) => timer.id)).toEqual(['t1', 't2'])
        expect(first[0]).toEqual({ id: 't1', runId: 'r1', kind: 'retry', dueAt: due[1] })
        expect(await s.shared.nextDueAt()).toBe(due[0])
        // A timer that is not due at `now` is not claimed, however early the call.
        expect(await s.shared.claimDueTimers('a', ago(5000), 10)).toEqual([])
        expect((await s.shared.claimTimer('a', 't0'))?.id).toBe('t0')
        expect(await s.shared.nextDueAt()).toBeUndefined()
        expect(await s.shared.claimTimer('a', 'gone')).toBeUndefined()
      })

      it('a claim that lapses goes back; a finished timer is gone, and one saved again since its claim stays', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 200 }), open({ leaseMs: 200 })]
        const past = ago(1000)
        await a.saveTimer({ id: 'x', runId: 'r', kind: 'retry', dueAt: past })
        await a.saveTimer({ id: 'y', runId: 'r2', kind: 'retry', dueAt: past })
        expect((await a.shared.claimDueTimers('a', isoNow(), 10)).map((t) => t.id).sort()).toEqual(['x', 'y'])
        // a saves y again (the next retry) before it finishes the old one.
        await a.saveTimer({ id: 'y', runId: 'r2', kind: 'retry', dueAt: past })
        await a.shared.finishTimer('a', 'y')
        expect((await a.listTimers()).map((t) => t.id).sort()).toEqual(['x', 'y'])
        // b cannot finish what a claimed; once a's claim on x lapses, b may claim it.
        await b.shared.finishTimer('b', 'x')
        await until(async () => (await b.shared.claimTimer('b', 'x')) !== undefined)
        await b.shared.finishTimer('b', 'x')
        expect((await a.listTimers()).map((t) => t.id)).toEqual(['y'])
      })

      it('an owner that lets go of everything gives back the timers it claimed and did not finish', async () => {
        const open = await database()
        const [a, b] = [open(), open()]
        await a.saveTimer({ id: 'x', runId: 'r', kind: 'delay', dueAt: ago(1000) })
        expect((await a.shared.claimDueTimers('a', isoNow(), 10)).map((t) => t.id)).toEqual(['x'])
        expect(await b.shared.claimTimer('b', 'x')).toBeUndefined()
        await a.shared.releaseLeases('a')
        expect((await b.shared.claimTimer('b', 'x'))?.id).toBe('x')
      })
    })

    describe('leases on running attempts', () => {
      it('a running run is leased by one owner at a time, until its lease lapses or is released', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 300 }), open({ leaseMs: 300 })]
        await a.createRun(makeRun({ id: 'run', status: 'running' }))
        await a.createRun(makeRun({ id: 'waiting', status: 'running' }))
        await a.saveTimer({ id: 'waiting:retry', runId: 'waiting', kind: 'retry', dueAt: FAR })
        await a.createRun(makeRun({ id: 'asleep', status: 'suspended' }))
        const won = await Promise.all([a.shared.acquireLease('a', 'run'), b.shared.acquireLease('b', 'run')])
        expect(won.filter(Boolean)).toHaveLength(1)
        const [holder, other] = won[0] ? (['a', 'b'] as const) : (['b', 'a'] as const)
        const stores = { a, b }
        expect(await stores[other].shared.acquireLease(other, 'run')).toBe(false)
        expect(await stores[holder].shared.renewLeases(holder, ['run'])).toEqual(['run'])
        expect(await stores[other].shared.renewLeases(other, ['run'])).toEqual([])
        // Released: taken over at once, as an orphan (a run waiting for its retry timer, or not running, never is).
        await stores[holder].shared.releaseLeases(holder)
        expect((await stores[other].shared.claimOrphanedRuns(other, 10)).map((run) => run.id)).toEqual(['run'])
        expect(await stores[holder].shared.acquireLease(holder, 'run')).toBe(false)
        // Lapsed: the other owner's lease, never renewed, goes back after leaseMs.
        const taken = await until(async () => {
          const ids = (await stores[holder].shared.claimOrphanedRuns(holder, 10)).map((run) => run.id)
          return ids.length > 0 && ids
        }, 5000)
        expect(taken).toEqual(['run'])
        expect(await a.shared.acquireLease('a', 'asleep')).toBe(false)
      })

      it('claimOrphanedRuns takes at most limit runs, and never one under a live lease', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 50 }), open()]
        for (const id of ['o1', 'o2', 'o3', 'held']) await a.createRun(makeRun({ id, status: 'running' }))
        expect(await b.shared.acquireLease('b', 'held')).toBe(true)
        // Made running by a, whose provisional lease lapses unless a takes it.
        await sleep(100)
        const first = (await b.shared.claimOrphanedRuns('c', 2)).map((run) => run.id)
        expect(first).toHaveLength(2)
        const second = (await b.shared.claimOrphanedRuns('c', 10)).map((run) => run.id)
        expect([...first, ...second].sort()).toEqual(['o1', 'o2', 'o3'])
      })

      it('claimOrphanedRuns leaves the runs whose task and version make one of the skipped keys', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 50 }), open()]
        await a.createRun(makeRun({ id: 'v1', taskName: 'report', version: 'v1', status: 'running' }))
        await a.createRun(makeRun({ id: 'v2', taskName: 'report', version: 'v2', status: 'running' }))
        await a.createRun(makeRun({ id: 'other', taskName: 'mail', version: 'v1', status: 'running' }))
        await a.createRun(makeRun({ id: 'none', taskName: 'report', status: 'running' }))
        await sleep(100)
        const claimed = await b.shared.claimOrphanedRuns('c', 10, ['report@v1', 'mail@v9'])
        expect(claimed.map((run) => run.id).sort()).toEqual(['none', 'other', 'v2'])
        expect((await b.shared.claimOrphanedRuns('c', 10, ['report@v1'])).map((run) => run.id)).toEqual([])
        expect((await b.shared.claimOrphanedRuns('d', 10)).map((run) => run.id)).toEqual(['v1'])
      })

      it('a renewal drops a run that was cancelled meanwhile: its attempt is to stop', async () => {
        const open = await database()
        const [a, b] = [open(), open()]
        await a.createRun(makeRun({ id: 'r', status: 'running' }))
        await a.createRun(makeRun({ id: 's', status: 'running' }))
        expect(await a.shared.acquireLease('a', 'r')).toBe(true)
        expect(await a.shared.acquireLease('a', 's')).toBe(true)
        expect(await b.updateRun('r', { status: 'cancelled', ok: false }, { status: LIVE_STATUSES })).toMatchObject({ status: 'cancelled' })
        expect(await a.shared.renewLeases('a', ['r', 's'])).toEqual(['s'])
        expect(await a.shared.renewLeases('a', [])).toEqual([])
      })

      it('a suspended run whose lease lapsed (its process died while suspending) is claimed; one whose lease was given up is not', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 200 }), open({ leaseMs: 200 })]
        for (const id of ['cut', 'done']) {
          await a.createRun(makeRun({ id, status: 'running' }))
          expect(await a.shared.acquireLease('a', id)).toBe(true)
          await a.updateRun(id, { status: 'suspended' }, { status: 'running' })
        }
        await a.shared.releaseLeases('a', ['done'])
        const taken = await until(async () => {
          const ids = (await b.shared.claimOrphanedRuns('b', 10)).map((run) => run.id)
          return ids.length > 0 && ids
        }, 5000)
        expect(taken).toEqual(['cut'])
      })

      it('a suspended run that waits for a child which has finished is claimed, so that it resumes', async () => {
        const open = await database()
        const s = open()
        const waitingFor = (child: string) => ({ stepKey: 'w', waitpoint: { type: 'task' as const, task: 'report', runId: child } })
        await s.createRun(makeRun({ id: 'finished-child', status: 'completed' }))
        await s.createRun(makeRun({ id: 'running-child', status: 'running' }))
        await s.createRun(makeRun({ id: 'met', status: 'suspended', suspended: waitingFor('finished-child') }))
        await s.createRun(makeRun({ id: 'unmet', status: 'suspended', suspended: waitingFor('running-child') }))
        expect((await open().shared.claimOrphanedRuns('other', 10)).map((run) => run.id)).toEqual(['met'])
      })

      it('a store that leases on create holds a run it inserts running for the owner it is given, fenced, until the lease lapses', async (context) => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 300 }), open({ leaseMs: 300 })]
        if (!a.shared.leasesOnCreate) return context.skip()
        await a.createRun(makeRun({ id: 'r', status: 'running' }), 'owner-a')
        await a.createRun(makeRun({ id: 'q', status: 'queued' }), 'owner-a')
        // Held by owner-a as a claim holds it: no one else takes it, its owner renews it, its writes land.
        expect(await b.shared.acquireLease('owner-b', 'r')).toBe(false)
        expect(await b.shared.claimOrphanedRuns('owner-b', 10)).toEqual([])
        expect(await a.shared.renewLeases('owner-a', ['r'])).toEqual(['r'])
        await a.saveStep('r', 'one', { status: 'completed' })
        // A run inserted otherwise has no lease: whoever dispatches it once it runs takes one.
        expect(await b.updateRun('q', { status: 'running' }, { status: 'queued' })).toMatchObject({ status: 'running' })
        expect(await b.shared.acquireLease('owner-b', 'q')).toBe(true)
        // owner-a stops renewing (its process died): b takes the run over, and owner-a's writes land no more.
        const taken = await until(async () => {
          const ids = (await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id)
          return ids.length > 0 && ids
        }, 5000)
        expect(taken).toEqual(['r'])
        await expect(a.saveStep('r', 'two', { status: 'completed' })).rejects.toMatchObject(LOST)
        await b.saveStep('r', 'two', { status: 'completed' })
        expect(Object.keys((await b.getRun('r'))!.steps).sort()).toEqual(['one', 'two'])
      })

      it('a process never takes as an orphan a run it holds itself, however late its renewal', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 50 }), open()]
        await a.createRun(makeRun({ id: 'r', status: 'running' }))
        expect(await a.shared.acquireLease('owner-a', 'r')).toBe(true)
        await sleep(100)
        expect(await a.shared.claimOrphanedRuns('owner-a', 10)).toEqual([])
        expect((await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id)).toEqual(['r'])
      })
    })

    describe('fenced leases', () => {
      it('a process holding no lease on a run writes to it unfenced, and a lease given up fences nothing more', async () => {
        const a = (await database())({ leaseMs: 50 })
        await a.createRun(makeRun({ id: 'r', status: 'running' }))
        await a.saveStep('r', 'one', { status: 'completed' })
        expect(await a.shared.acquireLease('owner-a', 'r')).toBe(true)
        await a.shared.releaseLeases('owner-a', ['r'])
        await a.saveStep('r', 'two', { status: 'completed' })
        expect(await a.updateRun('r', { status: 'completed', ok: true }, { status: 'running' })).toMatchObject({ status: 'completed' })
      })

      it('a suspended run claimed as an orphan is still resumed by whichever process meets its wait; its other steps stay fenced', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 50 }), open()]
        await a.createRun(makeRun({ id: 'r', status: 'running' }))
        expect(await a.shared.acquireLease('owner-a', 'r')).toBe(true)
        const suspended = { stepKey: 'w', waitpoint: { type: 'token' as const, tokenId: 'r:w' } }
        expect(await a.updateRun('r', { status: 'suspended', suspended }, { status: 'running' })).toMatchObject({ status: 'suspended' })
        await sleep(100)
        // A stalled between suspending and arming the wait: B takes the run to arm it.
        expect((await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id)).toEqual(['r'])
        // The token is completed on A, which resumes the run.
        await a.saveStep('r', 'w', { status: 'completed', output: 'yes', kind: 'waitForToken' })
        await expect(a.saveStep('r', 'other', { status: 'completed' })).rejects.toMatchObject(LOST)
        expect(await a.updateRun('r', { status: 'running', suspended: undefined }, { status: 'suspended' })).toMatchObject({
          status: 'running',
          steps: { w: { output: 'yes' } },
        })
      })

      it('a run made running again moves its fence on: the process whose attempt suspended it writes nothing more for it', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 50 }), open()]
        await a.createRun(makeRun({ id: 'r', status: 'running' }))
        expect(await a.shared.acquireLease('owner-a', 'r')).toBe(true)
        const suspended = { stepKey: 'w', waitpoint: { type: 'token' as const, tokenId: 'r:w', timeoutAt: isoNow() } }
        await a.updateRun('r', { status: 'suspended', suspended }, { status: 'running' })
        // B completes the token and resumes the run before A armed the token's timeout.
        await b.saveStep('r', 'w', { status: 'completed', kind: 'waitForToken' })
        await b.updateRun('r', { status: 'running', suspended: undefined }, { status: 'suspended' })
        await expect(
          a.saveTimer({ id: 'r:t', runId: 'r', kind: 'token-timeout', stepKey: 'w', tokenId: 'r:w', dueAt: isoNow() }),
        ).rejects.toMatchObject(LOST)
        expect(await b.listTimers()).toEqual([])
      })
    })

    describe('cron ticks and wake-ups', () => {
      it('registers the live processes and the versions each serves, newest first, until they unregister or go quiet past leaseMs', async () => {
        const open = await database()
        const [a, b] = [open({ leaseMs: 300 }), open({ leaseMs: 300 })]
        expect(await a.shared.liveVersions!()).toEqual([])
        await a.shared.register!('old', ['report@v1'])
        await sleep(20)
        await b.shared.register!('new', ['report@v2', 'mail@v2'])
        expect(await a.shared.liveVersions!()).toEqual([
          { owner: 'new', versions: ['mail@v2', 'report@v2'] },
          { owner: 'old', versions: ['report@v1'] },
        ])
        // Registering again keeps its place and takes the versions it now serves.
        await a.shared.register!('old', ['report@v1b'])
        expect((await b.shared.liveVersions!()).map((live) => live.versions)).toEqual([['mail@v2', 'report@v2'], ['report@v1b']])
        await b.shared.unregister!('new')
        expect((await a.shared.liveVersions!()).map((live) => live.owner)).toEqual(['old'])
        // A process serving what one registered before it served takes that one's place, gone or not:
        // the old release's process that restarts last is still the older.
        await sleep(20)
        await a.shared.register!('old-restarted', ['report@v1b'])
        await b.shared.register!('new-restarted', ['report@v2', 'mail@v2'])
        expect((await a.shared.liveVersions!()).map((live) => live.owner)).toEqual(['new-restarted', 'old', 'old-restarted'])
        await a.shared.unregister!('old-restarted')
        await b.shared.unregister!('new-restarted')
        // Not heard from for leaseMs: gone.
        await sleep(400)
        expect(await a.shared.liveVersions!()).toEqual([])
        await a.shared.register!('old', ['report@v1b'])
        expect((await a.shared.liveVersions!()).map((live) => live.owner)).toEqual(['old'])
      })

      it('each tick of a task is claimed once, however many stores claim it at once', async () => {
        const open = await database()
        const stores = [open(), open(), open()]
        const tick = '2030-01-01T12:00:00.000Z'
        const claims = await Promise.all(stores.flatMap((s) => [s.shared.claimTick('nightly', tick), s.shared.claimTick('nightly', tick)]))
        expect(claims.filter(Boolean)).toHaveLength(1)
        expect(await stores[0].shared.claimTick('other', tick)).toBe(true)
        expect(await stores[1].shared.claimTick('nightly', '2030-01-01T12:01:00.000Z')).toBe(true)
      })

      it('wake() on one store reaches every store that subscribed, until it stops listening', async () => {
        const open = await database()
        const [a, b, c] = [open(), open(), open()]
        const woken = { b: 0, c: 0 }
        const stopB = await b.shared.subscribe(() => woken.b++)
        const stopC = await c.shared.subscribe(() => woken.c++)
        await a.shared.wake()
        await until(() => woken.b === 1 && woken.c === 1)
        await stopB()
        await a.shared.wake()
        await until(() => woken.c === 2)
        expect(woken.b).toBe(1)
        await stopC()
      })

      it('says how long its leases last and how often an idle process looks for work', async () => {
        const { shared } = (await database())({ leaseMs: 1234 })
        expect(shared.leaseMs).toBe(1234)
        expect(shared.pollMs).toBeGreaterThan(0)
      })
    })

    describe('run changes', () => {
      const change = (id: string, status: RunChange['status'], taskName = 'report'): RunChange => ({ id, taskName, status })

      /** Every change `store` hears of as `owner`, in the order heard, and the way to stop. */
      async function listen(store: SharedStore, owner: string) {
        const heard: RunChange[] = []
        const stop = await store.shared.onChanges!(owner, (changes) => heard.push(...changes))
        return { heard, stop }
      }

      it('changes one store publishes reach every other store listening, in the order published, and never the publisher itself', async () => {
        const open = await database()
        const [a, b, c] = [open(), open(), open()]
        const onA = await listen(a, 'owner-a')
        const onB = await listen(b, 'owner-b')
        const onC = await listen(c, 'owner-c')
        const first = [change('r1', 'running'), change('r1', 'completed')]
        await a.shared.publishChanges!('owner-a', first)
        await a.shared.publishChanges!('owner-a', [change('r2', 'queued', 'other')])
        const all = [...first, change('r2', 'queued', 'other')]
        await until(() => onB.heard.length === 3 && onC.heard.length === 3)
        expect(onB.heard).toEqual(all)
        expect(onC.heard).toEqual(all)
        // c's change comes after a's: by the time a hears it, a would have heard its own.
        await c.shared.publishChanges!('owner-c', [change('r3', 'failed')])
        await until(() => onA.heard.length > 0 && onB.heard.length === 4)
        expect(onA.heard).toEqual([change('r3', 'failed')])
        expect(onC.heard).toEqual(all)
        await Promise.all([onA.stop(), onB.stop(), onC.stop()])
      })

      it('a listener that stopped hears nothing more; the others still do', async () => {
        const open = await database()
        const [a, b] = [open(), open()]
        const first = await listen(b, 'owner-b')
        const second = await listen(b, 'owner-b2')
        await a.shared.publishChanges!('owner-a', [change('r1', 'running')])
        await until(() => first.heard.length === 1 && second.heard.length === 1)
        await first.stop()
        await a.shared.publishChanges!('owner-a', [change('r1', 'completed')])
        await until(() => second.heard.length === 2)
        await sleep(100)
        expect(first.heard).toEqual([change('r1', 'running')])
        await second.stop()
        // No listener left: published all the same, heard by none.
        await a.shared.publishChanges!('owner-a', [change('r2', 'running')])
        const again = await listen(b, 'owner-b')
        await a.shared.publishChanges!('owner-a', [change('r3', 'running')])
        await until(() => again.heard.length > 0)
        expect(again.heard).toEqual([change('r3', 'running')])
        await again.stop()
      })

      it('a thousand changes published at once, and changes published from several calls together, arrive whole and in order', async () => {
        const open = await database()
        const [a, b] = [open(), open()]
        const onB = await listen(b, 'owner-b')
        const many = Array.from({ length: 1000 }, (_, i) => change(`run-${i}`, i % 2 ? 'completed' : 'running', `task-${i % 7}`))
        await a.shared.publishChanges!('owner-a', many)
        // Calls in one turn go out together.
        const calls = Array.from({ length: 20 }, (_, i) => change(`call-${i}`, 'running'))
        await Promise.all(calls.map((one) => a.shared.publishChanges!('owner-a', [one])))
        await until(() => onB.heard.length === 1020)
        expect(onB.heard).toEqual([...many, ...calls])
        await onB.stop()
      })
    })
  })
}
