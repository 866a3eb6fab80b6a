// Who runs again an attempt found running on a SQLite file that several
// processes share: `claimRunning` hands a starting process only the runs
// whose process is gone (its store closed, its heartbeat lapsed, or its
// process no longer exists), and `recover()` leaves the others' attempts to
// them. Real stores on one file; real child processes for the last case.
import { spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { STALE_MS } from '../../src/sqlite/owners.ts'
import { startChild } from '../postgres/_child.ts'
import { until } from '../tasks/_helpers.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { asVersion, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-owners-')

describe('SqliteRunStore.claimRunning', () => {
  it('leaves a run to the live store it entered running through, and takes it once that store closes', async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'queued' }))
    await a.updateRun(run.id, { status: 'running' })
    const b = store(path)
    expect((await b.claimRunning([run.id])).claimed).toEqual([])
    expect((await a.claimRunning([run.id])).claimed).toEqual([run.id])
    await a.close()
    expect((await b.claimRunning([run.id])).claimed).toEqual([run.id])
    // Now b's: a third store leaves it to b.
    expect((await store(path).claimRunning([run.id])).claimed).toEqual([])
  })

  it('a run created running belongs to its store; runs not running, and unknown ids, are claimed by nobody', async () => {
    const path = dbFile()
    const a = store(path)
    const running = await a.createRun(makeRun({ status: 'running' }))
    const waiting = await a.createRun(makeRun({ status: 'suspended' }))
    expect((await store(path).claimRunning([running.id, waiting.id, 'no-such-run'])).claimed).toEqual([])
  })

  it('takes the runs of a store whose heartbeat lapsed, and forgets that store', async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'running' }))
    const db = raw(path)
    db.prepare('UPDATE svc_owners SET beat_at = ?').run(Date.now() - STALE_MS - 1_000)
    const b = store(path)
    expect((await b.claimRunning([run.id])).claimed).toEqual([run.id])
    expect(db.prepare('SELECT count(*) AS n FROM svc_owners').get()).toEqual({ n: 1 })
  })

  it('takes the runs of a process that no longer exists at once, without waiting for its heartbeat to lapse', async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'running' }))
    // A process of this host that has exited: its pid names no process now.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid
    raw(path).prepare('UPDATE svc_owners SET pid = ?').run(gone)
    expect((await store(path).claimRunning([run.id])).claimed).toEqual([run.id])
  })

  it('a process on another host (or PID namespace) counts as live while its heartbeat is fresh', async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'running' }))
    const db = raw(path)
    db.prepare("UPDATE svc_owners SET host = 'elsewhere', pid = ?").run(spawnSync(process.execPath, ['-e', '0']).pid)
    expect((await store(path).claimRunning([run.id])).claimed).toEqual([])
    db.prepare('UPDATE svc_owners SET beat_at = ?').run(Date.now() - STALE_MS - 1_000)
    expect((await store(path).claimRunning([run.id])).claimed).toEqual([run.id])
  })

  it("a file written by schema version 2 gains the owners; its running runs are anybody's", async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'running' }))
    await a.close()
    // Back to what version 2 wrote: no owner columns, no owners table.
    asVersion(path, 2)
    const b = store(path)
    expect(await b.getRun(run.id)).toMatchObject({ status: 'running' })
    expect((await b.claimRunning([run.id])).claimed).toEqual([run.id])
  })
})

describe('runs another live process held at start', () => {
  it("are run once the holder's heartbeat lapses, as for a process restarted in another PID namespace", async () => {
    const path = dbFile()
    const a = store(path)
    const run = await a.createRun(makeRun({ status: 'running', taskName: 'job' }))
    // The holder: a process of this host in another PID namespace (its pid
    // cannot be checked from here), whose last heartbeat lapses in 1.5 s.
    const db = raw(path)
    db.prepare("INSERT INTO svc_owners (owner, pid, host, ns, beat_at) VALUES (7, 1, ?, 'pid:[elsewhere]', ?)").run(
      hostname(),
      Date.now() - STALE_MS + 1_500,
    )
    db.prepare('UPDATE svc_runs SET owner = 7 WHERE id = ?').run(run.id)
    const b = store(path)
    expect(await b.claimRunning([run.id])).toMatchObject({ claimed: [], recheckInMs: expect.any(Number) })
    let ran = 0
    const runtime = createTaskRuntime({
      routes: [{ path: '/api/job', module: { route: { kind: 'task' }, POST: () => ++ran } }],
      store: b,
      logger: { info() {}, warn() {}, error() {} },
      env: {},
    })
    try {
      await runtime.recover()
      expect(ran).toBe(0)
      await until(async () => (await b.getRun(run.id))?.status === 'completed', 10_000)
      expect(ran).toBe(1)
    } finally {
      await runtime.close()
    }
  })
})

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-flow/server.ts', import.meta.url))

describe('a process that starts on a shared SQLite file', () => {
  it("leaves a live process's attempt in flight alone, and runs it again once that process is killed", async () => {
    const runsPath = dbFile()
    const logPath = `${runsPath}.attempts.db`
    const log = raw(logPath)
    log.exec(`PRAGMA journal_mode = WAL;
      CREATE TABLE attempts (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, key TEXT NOT NULL, event TEXT NOT NULL, pid INTEGER NOT NULL)`)
    const starts = (id: string) =>
      (log.prepare("SELECT pid FROM attempts WHERE run_id = ? AND event = 'start' ORDER BY seq").all(id) as { pid: number }[]).map(
        (row) => row.pid,
      )
    const a = await startChild(SCRIPT, [runsPath, logPath])
    const id = await a.call<string>('trigger', { task: 'limited', payload: { n: 1, hold: true } })
    await until(async () => starts(id).length === 1, 30_000)
    // b starts (recover()) while a holds the attempt: b leaves it to a.
    const b = await startChild(SCRIPT, [runsPath, logPath])
    expect(await b.call<boolean>('release', {})).toBe(true)
    expect(starts(id)).toHaveLength(1)
    await a.kill()
    // c starts after a died: a's attempt is c's to run again.
    const c = await startChild(SCRIPT, [runsPath, logPath])
    await until(async () => starts(id).length === 2, 30_000)
    expect(await c.call<boolean>('release', {})).toBe(true)
    const s = store(runsPath)
    await until(async () => (await s.getRun(id))?.status === 'completed', 30_000)
    expect(starts(id)).toHaveLength(2)
    expect((await s.getRun(id))?.result).toMatchObject({ n: 1 })
    await Promise.all([b.kill(), c.kill()])
  })
})
