// What a SqliteRunStore shows is what is durable: no reader (getRun,
// listRuns, getToken, listTimers, waitForRun, run-change events) learns of a
// write before the commit that holds it has returned; each write of a group
// commit stands or falls alone; and a file that cannot take writes (full,
// locked) answers 503 STORE_UNAVAILABLE, loses nothing it had committed,
// and takes writes again once it can. Real files, and SQLite's own limits:
// `PRAGMA max_page_count` on the store's connection, another connection's
// write lock, triggers that refuse a statement.
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { serve } from '../http/_helpers.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { onFile, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, track, storeAndConnection } = sqliteFiles('svc-sqlite-durability-')

/** Lets the file grow by no page: a write that needs a new page fails with SQLITE_FULL. */
function fill(db: DatabaseSync): void {
  const { page_count } = db.prepare('PRAGMA page_count').get() as { page_count: number }
  db.exec(`PRAGMA max_page_count = ${page_count}`)
}

/** SQLite's default bound again: the room has come back. */
function makeRoom(db: DatabaseSync): void {
  db.exec('PRAGMA max_page_count = 4294967294')
}

/** What another connection reads from the file: what has been committed, and nothing else. */
function committed<T>(path: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return read(db)
  } finally {
    db.close()
  }
}
const committedStatus = (path: string, id: string) =>
  committed(path, (db) => (db.prepare('SELECT status FROM svc_runs WHERE id = ?').get(id) as { status: string } | undefined)?.status)
const committedIds = (path: string) =>
  committed(path, (db) => (db.prepare('SELECT id FROM svc_runs ORDER BY seq').all() as { id: string }[]).map((row) => row.id))

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** The reason of a rejected outcome, for `toMatchObject`. */
function reason(outcome: PromiseSettledResult<unknown>): unknown {
  if (outcome.status !== 'rejected') throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`)
  return outcome.reason
}

const unavailable = (cause: RegExp) => ({
  name: 'StoreUnavailableError',
  code: 'STORE_UNAVAILABLE',
  status: 503,
  message: expect.stringMatching(cause),
})

describe('SqliteRunStore readers see only what is committed', () => {
  it('getRun and listRuns answer a run written in the open batch only once that batch has committed', async () => {
    const path = dbFile()
    const s = store(path)
    const run = await s.createRun(makeRun({ status: 'running' }))
    const seen: [string | undefined, string | undefined][] = []
    const look = (read: RunRecord | undefined) => seen.push([read?.status, committedStatus(path, run.id)])
    // One turn: the run's end goes into the open batch, and readers ask before its commit.
    const end = s.updateRun(run.id, { status: 'completed', result: 'done' }, { status: 'running' })
    await Promise.all([end, s.getRun(run.id).then(look), s.listRuns().then(([read]) => look(read))])
    // Each reader saw the file as it was committed when the reader was answered.
    expect(seen).toEqual([
      ['completed', 'completed'],
      ['completed', 'completed'],
    ])
  })

  it('getToken and listTimers answer a write of the open batch only once it is committed', async () => {
    const path = dbFile()
    const s = store(path)
    const run = await s.createRun(makeRun({ status: 'suspended' }))
    const token = { id: `${run.id}:w`, runId: run.id, stepKey: 'w', status: 'waiting' as const, createdAt: run.createdAt }
    const timer = { id: 't', runId: run.id, kind: 'sleep' as const, stepKey: 's', dueAt: '2030-01-01T00:00:00.000Z' }
    const committedCount = (table: string) =>
      committed(path, (db) => Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n))
    const seen: string[] = []
    await Promise.all([
      s.putToken(token),
      s.saveTimer(timer),
      s.getToken(token.id).then((read) => seen.push(`token ${read ? 'read' : 'none'}, ${committedCount('svc_tokens')} committed`)),
      s.listTimers().then((read) => seen.push(`${read.length} timers read, ${committedCount('svc_timers')} committed`)),
    ])
    expect(seen.sort()).toEqual(['1 timers read, 1 committed', 'token read, 1 committed'])
  })

  it("waitForRun answers a run's end that another caller wrote only once that end is committed", async () => {
    const path = dbFile()
    const s = store(path)
    const rt = createTaskRuntime({ routes: [], store: s, logger: { info() {}, warn() {}, error() {} }, env: {} })
    try {
      // Not a run this runtime has in flight: its waiter is answered from the store.
      const run = await s.createRun(makeRun({ status: 'running' }))
      const end = s.updateRun(run.id, { status: 'completed', result: 1 }, { status: 'running' })
      const seen = await rt.waitForRun(run.id).then((done) => `${done.status}/${committedStatus(path, run.id)}`)
      await end
      expect(seen).toBe('completed/completed')
    } finally {
      await rt.close()
    }
  })

  it('run-change events report a change only once it is committed', async () => {
    const path = dbFile()
    const s = store(path)
    const rt = createTaskRuntime({
      routes: [{ path: '/api/ok', module: { kind: 'task', POST: () => 'done' } }],
      store: s,
      logger: { info() {}, warn() {}, error() {} },
      env: {},
    })
    const seen: string[] = []
    rt.onRunChange?.((change) => seen.push(`${change.status}/${committedStatus(path, change.id)}`))
    try {
      const runs = await Promise.all(Array.from({ length: 10 }, () => rt.trigger('ok')))
      await Promise.all(runs.map((run) => rt.waitForRun(run.id)))
      expect(seen).toHaveLength(20)
      expect(new Set(seen)).toEqual(new Set(['running/running', 'completed/completed']))
    } finally {
      await rt.close()
    }
  })
})

describe('SqliteRunStore: each write of a group commit stands or falls alone', () => {
  it("a run whose step the file refuses is not created, and the batch's other writes are", async () => {
    const path = dbFile()
    const s = store(path)
    await s.createRun(makeRun())
    onFile(
      path,
      `CREATE TRIGGER refuse_boom BEFORE INSERT ON svc_steps WHEN NEW.key = 'boom' BEGIN SELECT RAISE(ABORT, 'step refused'); END`,
    )
    const refused = makeRun({ steps: { fine: { status: 'completed', output: 1 }, boom: { status: 'completed', output: 2 } } })
    const other = makeRun()
    const before = committedIds(path)
    const outcomes = await Promise.allSettled([s.createRun(refused), s.createRun(other)])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled'])
    expect(reason(outcomes[0])).toMatchObject({ message: expect.stringMatching(/step refused/) })
    expect(committedIds(path)).toEqual([...before, other.id])
    expect(committed(path, (db) => db.prepare('SELECT key FROM svc_steps').all())).toEqual([])
    expect(await s.getRun(refused.id)).toBeUndefined()
    // Nothing of it holds the id: the same run without the refused step goes in.
    const { boom: _, ...steps } = refused.steps
    expect(await s.createRun({ ...refused, steps })).toMatchObject({ id: refused.id, steps })
  })

  it('flow control starts every run it picked, or none', async () => {
    const path = dbFile()
    const s = store(path)
    const [first, second] = [makeRun({ status: 'queued' }), makeRun({ status: 'queued' })]
    for (const run of [first, second]) await s.createRun(run)
    // The second start fails on its owner, after both runs were moved to running.
    onFile(
      path,
      `CREATE TRIGGER refuse_owner BEFORE UPDATE OF owner ON svc_runs WHEN NEW.id = '${second.id}' BEGIN SELECT RAISE(ABORT, 'owner refused'); END`,
    )
    const other = makeRun()
    const outcomes = await Promise.allSettled([
      s.startQueued(first.taskName, { concurrency: { limit: 2 } } as never, new Date().toISOString()),
      s.createRun(other),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled'])
    expect([first, second, other].map((run) => committedStatus(path, run.id))).toEqual(['queued', 'queued', 'running'])
    expect((await s.getRun(first.id))?.status).toBe('queued')
  })

  it('claimRunning takes every run it claims, or none', async () => {
    const path = dbFile()
    const gone = store(path)
    const [first, second] = [makeRun({ status: 'running' }), makeRun({ status: 'running' })]
    for (const run of [first, second]) await gone.createRun(run)
    // Closed: its runs are anyone's to claim.
    await gone.close()
    const owner = (id: string) =>
      committed(path, (db) => (db.prepare('SELECT owner FROM svc_runs WHERE id = ?').get(id) as { owner: number }).owner)
    const held = owner(first.id)
    const s = store(path)
    onFile(
      path,
      `CREATE TRIGGER refuse_owner BEFORE UPDATE OF owner ON svc_runs WHEN NEW.id = '${second.id}' BEGIN SELECT RAISE(ABORT, 'owner refused'); END`,
    )
    const other = makeRun()
    const outcomes = await Promise.allSettled([s.claimRunning([first.id, second.id]), s.createRun(other)])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled'])
    expect([owner(first.id), owner(second.id)]).toEqual([held, held])
    onFile(path, 'DROP TRIGGER refuse_owner')
    expect(await s.claimRunning([first.id, second.id])).toMatchObject({ claimed: [first.id, second.id] })
  })

  it('an eviction the file refuses takes its whole batch back; the next batch evicts', async () => {
    const path = dbFile()
    const s = store(path, { maxRuns: 1 })
    const oldest = await s.createRun(makeRun({ status: 'completed' }))
    onFile(path, `CREATE TRIGGER refuse_delete BEFORE DELETE ON svc_runs BEGIN SELECT RAISE(ABORT, 'delete refused'); END`)
    const next = makeRun({ status: 'completed' })
    await expect(s.createRun(next)).rejects.toThrow(/delete refused/)
    expect(committedIds(path)).toEqual([oldest.id])
    expect(await s.getRun(next.id)).toBeUndefined()
    onFile(path, 'DROP TRIGGER refuse_delete')
    await s.createRun(next)
    expect(committedIds(path)).toEqual([next.id])
  })
})

describe('SqliteRunStore on a file that cannot take writes', () => {
  it('a write SQLite takes its whole transaction back for takes its batch with it; later writes get a batch of their own', async () => {
    const path = dbFile()
    const { store: s, db } = storeAndConnection(path)
    const [a, b, c] = [await s.createRun(makeRun()), await s.createRun(makeRun()), await s.createRun(makeRun())]
    fill(db)
    // One turn: a change that fits in the file's pages, one that needs more
    // (SQLite rolls the whole transaction back: a one-row write with no
    // trigger keeps no statement journal to roll back to), then another that fits.
    const first = s.updateRun(a.id, { status: 'completed', result: 'a' }, { status: 'running' })
    const read = s.getRun(a.id)
    const big = s.updateRun(c.id, { result: 'x'.repeat(200_000) })
    const after = s.updateRun(b.id, { result: 'b' })
    const outcomes = await Promise.allSettled([first, big, after])
    // The first write went with the transaction: its caller hears of it, and no reader saw it.
    expect(reason(outcomes[0])).toMatchObject(unavailable(/SQLITE_FULL/))
    expect(reason(outcomes[1])).toMatchObject(unavailable(/SQLITE_FULL/))
    expect((await read)?.status).toBe('running')
    // The last one came after: it was written in a batch of its own, and committed.
    expect(outcomes[2]).toMatchObject({ status: 'fulfilled', value: { result: 'b' } })
    expect([committedStatus(path, a.id), committedStatus(path, b.id)]).toEqual(['running', 'running'])
    expect(
      committed(
        path,
        (db) => JSON.parse((db.prepare('SELECT record FROM svc_runs WHERE id = ?').get(b.id) as { record: string }).record).result,
      ),
    ).toBe('b')
    expect(await s.getRun(a.id)).toMatchObject({ status: 'running' })
    expect(committedIds(path)).toEqual([a.id, b.id, c.id])
  })

  it('a full file answers STORE_UNAVAILABLE, keeps every run it committed, and takes writes again once there is room', async () => {
    const path = dbFile()
    const { store: s, db } = storeAndConnection(path)
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.createRun(makeRun({ status: i % 2 ? 'completed' : 'scheduled' }))),
    )
    fill(db)
    const big = makeRun({ input: 'x'.repeat(200_000) })
    const refused = await Promise.allSettled([
      s.createRun(big),
      s.saveStep(runs[0].id, 'a', { status: 'completed', output: 'y'.repeat(200_000) }),
    ])
    for (const outcome of refused) {
      expect(reason(outcome)).toMatchObject(unavailable(/the database file is full \(SQLITE_FULL/))
      expect(reason(outcome)).toMatchObject({ message: expect.stringMatching(/free disk space/) })
    }
    expect(await s.getRun(big.id)).toBeUndefined()
    expect((await s.getRun(runs[0].id))?.steps).toEqual({})
    expect((await s.listRuns()).length).toBe(20)
    makeRoom(db)
    await s.createRun(big)
    await s.saveStep(runs[0].id, 'a', { status: 'completed', output: 'y' })
    await s.close()
    const reopened = store(path)
    expect(new Set((await reopened.listRuns()).map((run) => run.id))).toEqual(new Set([...runs, big].map((run) => run.id)))
    expect((await reopened.getRun(runs[0].id))?.steps).toEqual({ a: { status: 'completed', output: 'y' } })
  })

  it('POST /__tasks/<name> answers 503 STORE_UNAVAILABLE while the file is full, and starts the run once there is room', async () => {
    const path = dbFile()
    const { store: s, db } = storeAndConnection(path)
    const routes = [
      {
        path: '/api/echo',
        module: { kind: 'task' as const, POST: (ctx: { input: unknown }) => ({ length: JSON.stringify(ctx.input).length }) },
      },
    ]
    const server = await serve({ apiRoutes: routes, store: s })
    try {
      const post = (body: unknown) =>
        fetch(`${server.url}/__tasks/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const before = (await (await post({ small: true })).json()) as { id: string }
      await server.runtime.waitForRun(before.id)
      fill(db)
      const large = { text: 'x'.repeat(200_000) }
      const res = await post(large)
      expect(res.status).toBe(503)
      const body = (await res.json()) as { code: string; error: string }
      expect(body.code).toBe('STORE_UNAVAILABLE')
      expect(body.error).toMatch(/^SqliteRunStore: the database file is full \(SQLITE_FULL.*free disk space/)
      expect(committedIds(path)).toEqual([before.id])
      expect(committedStatus(path, before.id)).toBe('completed')
      makeRoom(db)
      const after = await post(large)
      expect(after.status).toBe(202)
      const { id } = (await after.json()) as { id: string }
      expect(await server.runtime.waitForRun(id)).toMatchObject({ status: 'completed', result: { length: 200_011 } })
      expect(committedIds(path)).toEqual([before.id, id])
    } finally {
      await server.close()
    }
  })

  it('while another connection holds the write lock, readers see what was committed and a write answers STORE_UNAVAILABLE after busyTimeoutMs', async () => {
    const path = dbFile()
    const s = store(path, { busyTimeoutMs: 100 })
    const run = await s.createRun(makeRun())
    // Another process's transaction, holding the write lock with the run's end not yet committed.
    const other = new DatabaseSync(path)
    track(other)
    other.exec('BEGIN IMMEDIATE')
    other
      .prepare('UPDATE svc_runs SET status = ?, record = ? WHERE id = ?')
      .run('completed', JSON.stringify({ ...run, status: 'completed' }), run.id)
    await nextTurn()
    expect((await s.getRun(run.id))?.status).toBe('running')
    expect((await s.listRuns()).map((read) => read.status)).toEqual(['running'])
    const started = Date.now()
    await expect(s.updateRun(run.id, { result: 1 })).rejects.toMatchObject(unavailable(/locked.*SQLITE_BUSY.*busyTimeoutMs/))
    expect(Date.now() - started).toBeGreaterThanOrEqual(90)
    other.exec('COMMIT')
    await nextTurn()
    expect((await s.getRun(run.id))?.status).toBe('completed')
    expect(await s.updateRun(run.id, { result: 1 })).toMatchObject({ status: 'completed', result: 1 })
  })
})
