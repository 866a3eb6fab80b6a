// Run changes between the stores on one SQLite file opened with
// `shared: true` (sqlite/changes.ts), beyond the SharedWork contract: no
// row is written while no other store listens, the `changes` table stays
// bounded, a store that closes still publishes what it had, and two
// engines on one file each see the other's changes.
import { describe, expect, it } from 'vitest'
import type { SqliteRunStore } from '../../src/node.ts'
import { CHANGES_PER_ROW, KEEP_ROWS, PRUNE_BATCH } from '../../src/sqlite/changes.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/public-runtime.ts'
import type { RunChange } from '../../src/types.ts'
import { sleep, until } from '../tasks/_helpers.ts'
import { sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-changes-')

const shared = (path: string) => store(path, { shared: true }) as SqliteRunStore & { shared: NonNullable<SqliteRunStore['shared']> }
const change = (i: number): RunChange => ({ id: `run-${i}`, taskName: 'report', status: 'running' })

/** Listens on a store of its own on `path`, as another process would; resolves once listening. */
async function listener(path: string) {
  const heard: RunChange[] = []
  const stop = await shared(path).shared.onChanges('listener', (changes) => heard.push(...changes))
  return { heard, stop }
}

describe('the changes table of a shared SQLite file', () => {
  it('gets no row while no other store listens: neither from a store with no listener, nor from one listening itself', async () => {
    const path = dbFile()
    const s = shared(path)
    const db = raw(path)
    const rows = () => db.prepare('SELECT owner FROM svc_changes').all()
    await s.shared.publishChanges('owner-a', [change(1)])
    const own = await s.shared.onChanges('owner-a2', () => {})
    await s.shared.publishChanges('owner-a', [change(2)])
    expect(rows()).toEqual([])
    // Another store listens: rows from now on, until it stops.
    const other = await listener(path)
    await s.shared.publishChanges('owner-a', [change(3)])
    expect(rows()).toEqual([{ owner: 'owner-a' }])
    await until(() => other.heard.length === 1)
    await other.stop()
    await sleep(50)
    await s.shared.publishChanges('owner-a', [change(4)])
    expect(rows()).toHaveLength(1)
    expect(db.prepare('SELECT count(*) AS n FROM svc_change_listeners').get()).toEqual({ n: 1 })
    await own()
  })

  it('keeps the newest rows: each batch prunes at most a batch of the oldest, down to the rows it keeps', async () => {
    const path = dbFile()
    const s = shared(path)
    const db = raw(path)
    await listener(path)
    const rows = () => Number((db.prepare('SELECT count(*) AS n FROM svc_changes').get() as { n: number }).n)
    // 1,500 rows in one batch: its prune removes one batch of the oldest.
    const many = (KEEP_ROWS + 5 * PRUNE_BATCH) * CHANGES_PER_ROW
    await s.shared.publishChanges(
      'owner-a',
      Array.from({ length: many }, (_, i) => change(i)),
    )
    expect(rows()).toBe(KEEP_ROWS + 4 * PRUNE_BATCH)
    for (let i = 0; i < 5; i++) await s.shared.publishChanges('owner-a', [change(i)])
    expect(rows()).toBe(KEEP_ROWS)
    // Rows older than a minute go too, a batch at a time.
    db.exec('UPDATE svc_changes SET at = 0')
    await s.shared.publishChanges('owner-a', [change(0)])
    expect(rows()).toBe(KEEP_ROWS + 1 - PRUNE_BATCH)
  })

  it('the changes a store publishes just before it closes are written as it closes', async () => {
    const path = dbFile()
    const [a, b] = [shared(path), shared(path)]
    const heard: RunChange[] = []
    const stop = await b.shared.onChanges('owner-b', (changes) => heard.push(...changes))
    const published = a.shared.publishChanges('owner-a', [change(1)])
    await a.close()
    await published
    await until(() => heard.length === 1)
    expect(heard).toEqual([change(1)])
    await stop()
  })

  it('a change rides on a batch the store writes anyway: publishing while the store writes adds no commit', async () => {
    const path = dbFile()
    const s = shared(path)
    const db = raw(path)
    await listener(path)
    const commits = () => Number((db.prepare('PRAGMA data_version').get() as { data_version: number }).data_version)
    const before = commits()
    const published = s.shared.publishChanges('owner-a', [change(1)])
    await s.saveTimer({ id: 't', runId: 'r', kind: 'delay', dueAt: '2099-01-01T00:00:00.000Z' })
    await published
    await sleep(50)
    // One commit by another connection, the store's: the timer's and the change's together.
    expect(commits()).toBe(before + 1)
    expect(db.prepare('SELECT owner, payload FROM svc_changes').all()).toEqual([
      { owner: 'owner-a', payload: JSON.stringify([['run-1', 'report', 'running']]) },
    ])
  })
})

describe('two engines on one shared file', () => {
  it("each engine's onRunChange reports the other's changes as well as its own, each once, while it has listeners", async () => {
    const path = dbFile()
    const route = { path: '/api/report', module: { route: { kind: 'task' as const }, POST: () => 'done' } }
    const [a, b] = [
      createTaskRuntime({ routes: [route], store: shared(path) }),
      createTaskRuntime({ routes: [route], store: shared(path) }),
    ]
    const onA: RunChange[] = []
    const stopA = a.onRunChange!((c) => onA.push(c))
    // The listener starts a moment after the first subscription: until then, runs of b may pass unseen.
    await sleep(100)
    const ofB = await b.trigger('report')
    const ofA = await a.trigger('report')
    await until(() => onA.filter((c) => c.status === 'completed').length === 2)
    await sleep(100)
    const statuses = (id: string) => onA.filter((c) => c.id === id).map((c) => c.status)
    expect(statuses(ofB.id)).toEqual(['running', 'completed'])
    expect(statuses(ofA.id)).toEqual(['running', 'completed'])
    expect(onA.find((c) => c.id === ofB.id)).toEqual({ id: ofB.id, taskName: 'report', status: 'running' })
    // The last listener gone, nothing more arrives.
    stopA()
    await b.trigger('report')
    await sleep(100)
    expect(onA).toHaveLength(4)
    await Promise.all([a.close(), b.close()])
  })
})
