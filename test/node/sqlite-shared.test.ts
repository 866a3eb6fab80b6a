// A SqliteRunStore file opened with `shared: true` by several processes,
// which split the work through `store.shared` as processes on one Postgres
// database do. Stores on one file stand for processes here: the store
// contract, the SharedWork contract and the fenced store contract (its
// leases taken and given up as an engine does), then what this store adds
// to the file and what the engine does on it. Real processes, one of them
// killed, are in sqlite-processes.test.ts.
import { describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/public-runtime.ts'
import type { TaskContext } from '../../src/types.ts'
import { sleep, until } from '../tasks/_helpers.ts'
import { fencedStoreContract } from '../tasks/fenced-store-contract.ts'
import { sqliteItems } from '../tasks/transaction-contract.ts'
import { sharedWorkContract } from '../tasks/shared-work-contract.ts'
import { makeRun, runStoreContract } from '../tasks/store-contract.ts'
import { asVersion, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-shared-')

const shared = (path: string, options: { leaseMs?: number; pollMs?: number } = {}) =>
  store(path, { shared: true, ...options }) as SqliteRunStore & { shared: NonNullable<SqliteRunStore['shared']> }

runStoreContract('SqliteRunStore (shared file)', (options) => store(dbFile(), { shared: true, ...options }))

sharedWorkContract('SqliteRunStore (stores on one shared file)', () => {
  const path = dbFile()
  return (options) => shared(path, options)
})

/** The owner each store claims as, as its engine would. */
const owners = new WeakMap<RunStore, string>()

fencedStoreContract('SqliteRunStore (two stores on one shared file)', () => {
  const path = dbFile()
  const a = shared(path, { leaseMs: 50 })
  const b = shared(path)
  const db = raw(path)
  owners.set(a, 'owner-a').set(b, 'owner-b')
  return {
    a,
    b,
    hold: async (s, id) => {
      expect(await (s as typeof a).shared.acquireLease(owners.get(s)!, id)).toBe(true)
    },
    release: (s, id) => (s as typeof a).shared.releaseLeases(owners.get(s)!, [id]),
    takeOver: async (...ids) => {
      // A's lease lapses after 50 ms; B's sweep claims what it held.
      await sleep(100)
      expect((await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id).sort()).toEqual([...ids].sort())
    },
    fence: async (id) => (db.prepare('SELECT owner_fence AS f FROM svc_runs WHERE id = ?').get(id) as { f: number }).f,
    app: sqliteItems(db),
  }
})

describe('SqliteRunStore with shared: true', () => {
  it('is shared only when asked: a store opened without it has no `shared`, and checks its options', () => {
    const path = dbFile()
    expect(store(dbFile()).shared).toBeUndefined()
    expect(shared(path).shared).toMatchObject({ leaseMs: 30_000, pollMs: 1000 })
    expect(() => new SqliteRunStore({ path, shared: 'yes' as never })).toThrow(/shared must be true or false \(got "yes"\)/)
    expect(() => new SqliteRunStore({ path, shared: true, leaseMs: 0 })).toThrow(/leaseMs must be a whole number, 1 or more \(got 0\)/)
    expect(() => new SqliteRunStore({ path, shared: true, pollMs: 1.5 })).toThrow(RangeError)
  })

  it('a timer saved on a file that was not shared is claimed once the file is opened shared', async () => {
    const path = dbFile()
    const plain = store(path)
    await plain.saveTimer({ id: 't', runId: 'r', kind: 'delay', dueAt: new Date(Date.now() - 1000).toISOString() })
    await plain.close()
    const s = shared(path)
    expect((await s.shared.claimDueTimers('a', new Date().toISOString(), 10)).map((timer) => timer.id)).toEqual(['t'])
  })

  it('a file written by schema version 4 gains the lease columns; its timers are claimable by their due time', async () => {
    const path = dbFile()
    const plain = new SqliteRunStore({ path })
    const past = new Date(Date.now() - 1000).toISOString()
    await plain.saveTimer({ id: 'due', runId: 'r', kind: 'sleep', stepKey: 'nap', dueAt: past })
    await plain.saveTimer({ id: 'later', runId: 'r', kind: 'sleep', stepKey: 'nap', dueAt: '2099-01-01T00:00:00.000Z' })
    await plain.close()
    asVersion(path, 4)
    const s = shared(path)
    expect(raw(path).prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION })
    expect(await s.shared.nextDueAt()).toBe(past)
    expect((await s.shared.claimDueTimers('a', new Date().toISOString(), 10)).map((timer) => timer.id)).toEqual(['due'])
  })

  it('a cancel from one process wakes the others, so the process running the attempt renews at once and stops it', async () => {
    const path = dbFile()
    const [a, b] = [shared(path), shared(path)]
    let woken = 0
    await a.shared.subscribe(() => woken++)
    await b.createRun(makeRun({ id: 'r', status: 'running' }))
    await b.updateRun('r', { status: 'cancelled', ok: false }, { status: ['running'] })
    await until(() => woken === 1)
  })

  it('the engine runs on a shared file: a run asleep when its process closes is woken by the other process', async () => {
    const path = dbFile()
    const ran: string[] = []
    const task = (who: string) => ({
      path: '/api/nap',
      module: {
        route: { kind: 'task' as const },
        async POST(ctx: TaskContext) {
          await ctx.step.run('before', () => ran.push(`before:${who}`))
          await ctx.step.sleep('nap', 1)
          await ctx.step.run('after', () => ran.push(`after:${who}`))
          return who
        },
      },
    })
    const first = createTaskRuntime({ routes: [task('first')], store: shared(path, { leaseMs: 300, pollMs: 50 }) })
    const second = createTaskRuntime({ routes: [task('second')], store: shared(path, { leaseMs: 300, pollMs: 50 }) })
    await Promise.all([first.recover(), second.recover()])
    const run = await first.trigger('nap', {})
    await until(() => ran.includes('before:first'))
    // Its timer is in the file, not in the process that armed it.
    await first.close()
    const done = await until(async () => {
      const latest = await second.getRun(run.id)
      return latest?.status === 'completed' && latest
    }, 10_000)
    expect(done.result).toBe('second')
    expect(ran).toEqual(['before:first', 'after:second'])
    await second.close()
  })
})

describe('a file opened both ways at once', () => {
  it('a store opened shared on a file a live store opened without it fails, naming the other process, and the other way round', () => {
    const plainFirst = dbFile()
    store(plainFirst)
    expect(() => new SqliteRunStore({ path: plainFirst, shared: true })).toThrow(
      new RegExp(`is open without shared: true in process ${process.pid} .*every process on a file must open it the same way`),
    )
    const sharedFirst = dbFile()
    shared(sharedFirst)
    expect(() => new SqliteRunStore({ path: sharedFirst })).toThrow(/is open with shared: true in process/)
    // The refused store left nothing behind: the file opens the right way.
    expect(shared(sharedFirst).shared).toBeDefined()
  })

  it('once the other store has closed, the file opens the other way', async () => {
    const path = dbFile()
    await store(path).close()
    expect(shared(path).shared).toBeDefined()
  })
})
