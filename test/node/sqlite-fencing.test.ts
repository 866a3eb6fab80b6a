// Fenced runs on a SqliteRunStore file several processes share. Every
// claim of a run (made running, taken over by `claimRunning`, started by
// flow control) and every cancel moves its `owner_fence` on; the writes an
// attempt makes (steps, its end, its attempts, children, tokens, timers)
// land only while the run's owner and fence are still the ones this
// store's claim set, so a process that stalled past its heartbeat and lost
// the run to another writes nothing once it goes on. First the fenced store
// contract and the rules of this store's own, with two stores on one file
// standing for two processes; then the engine; then real processes, one of
// them stopped (SIGSTOP) mid-attempt.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { STALE_MS } from '../../src/sqlite/owners.ts'
import { startChild } from '../postgres/_child.ts'
import { sleep, until } from '../tasks/_helpers.ts'
import { fencedStoreContract } from '../tasks/fenced-store-contract.ts'
import { sqliteItems } from '../tasks/transaction-contract.ts'
import { lostAttemptStopsAtOnce } from '../tasks/_lost-attempt.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { asVersion, sqliteFiles } from './_sqlite-files.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-fencing/server.ts', import.meta.url))

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-fencing-')

/**
 * Two stores on a fresh file, as two processes would open it. `takeOver`
 * makes every other store's heartbeat stale, as a process stopped past
 * STALE_MS leaves it, and has `b` claim the runs (what its `recover()`, or
 * its look again after `recheckInMs`, does).
 */
function twoProcesses() {
  const path = dbFile()
  const a = store(path)
  const b = store(path)
  const db = raw(path)
  const fence = (id: string) => (db.prepare('SELECT owner_fence AS f FROM svc_runs WHERE id = ?').get(id) as { f: number }).f
  const takeOver = async (...ids: string[]) => {
    db.prepare('UPDATE svc_owners SET beat_at = ?').run(Date.now() - STALE_MS - 1_000)
    expect((await b.claimRunning(ids)).claimed).toEqual(ids)
  }
  return { a, b, db, path, fence, takeOver }
}

fencedStoreContract('SqliteRunStore (two stores on one file)', () => {
  const { a, b, db, fence, takeOver } = twoProcesses()
  return {
    a,
    b,
    app: sqliteItems(db),
    // The write that made the run running made it the store's (sqlite/owners.ts).
    hold: async () => {},
    // Writing the run out of running let it go.
    release: async () => {},
    takeOver,
    fence: async (id) => fence(id),
  }
})

const LOST = { code: 'LEASE_LOST' }

describe('fenced runs on a shared SqliteRunStore file', () => {
  it('a run inserted running starts at fence 1, its first claim; one inserted otherwise at 0', async () => {
    const { a, fence } = twoProcesses()
    await a.createRun(makeRun({ id: 'r', status: 'running' }))
    await a.createRun(makeRun({ id: 'q', status: 'queued' }))
    expect([fence('r'), fence('q')]).toEqual([1, 0])
  })

  it("a write sees another process's claim committed in the same event-loop turn as its last read of the run", async () => {
    const { a, db } = twoProcesses()
    await a.createRun(makeRun({ id: 'r', status: 'running' }))
    await a.createRun(makeRun({ id: 's', status: 'queued' }))
    expect(await a.getRun('s')).toMatchObject({ status: 'queued' })
    // No turn passes between a's read (which cached both runs) and its
    // writes: only the batch, once it holds the write lock, can tell.
    db.prepare("UPDATE svc_runs SET owner = 7, owner_fence = owner_fence + 1 WHERE id = 'r'").run()
    db.prepare(`UPDATE svc_runs SET status = 'running', record = json_set(record, '$.status', 'running') WHERE id = 's'`).run()
    const compared = a.updateRun('s', { status: 'cancelled' }, { status: 'queued' })
    const fenced = a.saveStep('r', 'one', { status: 'completed' })
    await expect(fenced).rejects.toMatchObject(LOST)
    expect(await compared).toBeUndefined()
    expect(await a.getRun('s')).toMatchObject({ status: 'running' })
  })

  it('a failed fenced write leaves the rest of its batch alone', async () => {
    const { a, b, takeOver } = twoProcesses()
    await a.createRun(makeRun({ id: 'r', status: 'running' }))
    await a.createRun(makeRun({ id: 's', status: 'running' }))
    await takeOver('r')
    // One event-loop turn, one batch: s's step is kept, r's is not.
    const writes = [a.saveStep('r', 'one', { status: 'completed' }), a.saveStep('s', 'one', { status: 'completed' })]
    await expect(writes[0]).rejects.toMatchObject(LOST)
    await writes[1]
    expect(Object.keys((await b.getRun('s'))!.steps)).toEqual(['one'])
    expect(Object.keys((await b.getRun('r'))!.steps)).toEqual([])
  })

  it('a store that claims a run it holds keeps its fence, and a live holder keeps the run from the others', async () => {
    const { a, b, fence } = twoProcesses()
    await a.createRun(makeRun({ id: 'r', status: 'running' }))
    expect((await a.claimRunning(['r'])).claimed).toEqual(['r'])
    expect(fence('r')).toBe(1)
    await a.saveStep('r', 'one', { status: 'completed' })
    expect((await b.claimRunning(['r'])).claimed).toEqual([])
  })

  it('a file written by schema version 3 gains the fences; its running runs are fenced from their next claim', async () => {
    const path = dbFile()
    const a = new SqliteRunStore({ path })
    const run = await a.createRun(makeRun({ status: 'running' }))
    await a.close()
    // Back to what version 3 wrote: no owner_fence column.
    asVersion(path, 3)
    const b = store(path)
    expect(await b.getRun(run.id)).toMatchObject({ status: 'running' })
    const check = raw(path)
    expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION })
    expect(check.prepare('SELECT owner_fence FROM svc_runs').get()).toEqual({ owner_fence: 0 })
    expect((await b.claimRunning([run.id])).claimed).toEqual([run.id])
    expect(check.prepare('SELECT owner_fence FROM svc_runs').get()).toEqual({ owner_fence: 1 })
    await b.saveStep(run.id, 'one', { status: 'completed' })
    expect(await b.updateRun(run.id, { status: 'completed', ok: true }, { status: 'running' })).toMatchObject({ status: 'completed' })
  })
})

describe('fenced runs in the task engine on SqliteRunStore', () => {
  it('a write that finds the run taken over aborts the attempt at once: a handler that catches the error runs no further step', async () => {
    const path = dbFile()
    const db = raw(path)
    await lostAttemptStopsAtOnce(store(path), (id) =>
      db.prepare('UPDATE svc_runs SET owner = 7, owner_fence = owner_fence + 1 WHERE id = ?').run(id),
    )
  })
})

describe('fenced runs across processes on one SQLite file', () => {
  it('a process stopped past its heartbeat mid-attempt records nothing once continued: the run stays the one that took it over', async () => {
    const path = dbFile()
    const effects = `${path}.effects.log`
    writeFileSync(effects, '')
    const ran = (id: string) =>
      readFileSync(effects, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`${id} `))
        .map((line) => line.split(' ').slice(1))
    const a = await startChild(SCRIPT, [path, effects])
    await a.call('hold')
    const id = await a.call<string>('trigger', { task: 'three' })
    // A is inside step "two" (step "one" is recorded): stop it there.
    await until(() => ran(id).some(([step, pid]) => step === 'two' && Number(pid) === a.pid), 10_000)
    process.kill(a.pid, 'SIGSTOP')
    let b!: Awaited<ReturnType<typeof startChild>>
    const s = store(path)
    try {
      // Stopped, A renews no heartbeat: time passing past STALE_MS leaves
      // it as this does. B then starts on the file and takes the run over
      // (recover(), claimRunning), and finishes it.
      raw(path)
        .prepare('UPDATE svc_owners SET beat_at = ? WHERE pid = ?')
        .run(Date.now() - STALE_MS - 1_000, a.pid)
      b = await startChild(SCRIPT, [path, effects])
      const done = await until(async () => {
        const run = await s.getRun(id)
        return run?.status === 'completed' && run
      }, 10_000)
      expect(done.result).toEqual({ one: a.pid, two: b.pid, three: b.pid, finishedBy: b.pid })
    } finally {
      process.kill(a.pid, 'SIGCONT')
    }
    // A's step "two" returns now; its attempt goes on with a run B took.
    await until(async () => (await a.call<string[]>('logs')).some((line) => line.includes(`lost the lease on run ${id}`)), 5000)
    // Time for anything A would still write to land.
    await sleep(300)

    const run = (await s.getRun(id))!
    expect(run.status).toBe('completed')
    expect(run.result).toEqual({ one: a.pid, two: b.pid, three: b.pid, finishedBy: b.pid })
    expect(Object.fromEntries(Object.entries(run.steps).map(([key, step]) => [key, step.output]))).toEqual({
      one: a.pid,
      two: b.pid,
      three: b.pid,
    })
    // "one" ran once, "two" in both (A was inside it when it stopped), "three" only in B.
    const rows = ran(id).map(([step, pid]) => `${step} ${Number(pid) === a.pid ? 'A' : Number(pid) === b.pid ? 'B' : pid}`)
    expect(rows.sort()).toEqual(['one A', 'three B', 'two A', 'two B'])
    const lost = (await a.call<string[]>('logs')).filter((line) => line.includes('lost the lease'))
    expect(lost).toHaveLength(1)
    await Promise.all([a.close(), b.close()])
  })
})
