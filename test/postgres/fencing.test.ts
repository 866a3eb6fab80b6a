// Fenced leases on a shared PostgresRunStore. Every claim of a run moves
// its fence on; the writes an attempt makes (steps, its end, children,
// tokens, timers) land only while the fence is still the one its process's
// claim got, so a process that stalled past leaseMs and lost the run to
// another writes nothing once it goes on. First the fenced store contract,
// with two stores on one schema standing for two processes (the rules of
// leases themselves are in the SharedWork contract, store.test.ts); then
// the engine; then real processes, one of them stopped (SIGSTOP)
// mid-attempt.
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import { fencedStoreContract } from '../tasks/fenced-store-contract.ts'
import { postgresItems } from '../tasks/transaction-contract.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { sleep, until } from '../tasks/_helpers.ts'
import { lostAttemptStopsAtOnce } from '../tasks/_lost-attempt.ts'
import { type ChildServer, startChild } from './_child.ts'
import { createDatabase } from './_pg.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/postgres-fencing/server.ts', import.meta.url))
const LEASE_MS = 400
const POLL_MS = 100

const startServer = (url: string): Promise<ChildServer> => startChild(SCRIPT, [url, String(LEASE_MS), String(POLL_MS)])

let url: string
let store: PostgresRunStore
let db: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('fencing')
  store = new PostgresRunStore({ url })
  await store.ready()
  db = postgres(url, { onnotice: () => {} })
  await db`CREATE TABLE effects (run_id text NOT NULL, step text NOT NULL, pid integer NOT NULL)`
})
afterAll(async () => {
  await store.close()
  await db.end()
})

const opened: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close()
})
let schemas = 0

/** Two stores on a fresh schema, as two processes would open it: A's lease lapses after 50 ms, B's lasts. */
function twoProcesses(): { a: PostgresRunStore; b: PostgresRunStore; schema: string } {
  const schema = `fence${++schemas}`
  const a = new PostgresRunStore({ url, schema, leaseMs: 50 })
  const b = new PostgresRunStore({ url, schema, leaseMs: 60_000 })
  opened.push(a, b)
  return { a, b, schema }
}

/** The owner each store of `twoProcesses` claims as, as its engine would. */
const owners = new WeakMap<RunStore, string>()

fencedStoreContract('PostgresRunStore (two stores on one schema)', async () => {
  const { a, b, schema } = twoProcesses()
  owners.set(a, 'owner-a').set(b, 'owner-b')
  return {
    a,
    b,
    hold: async (s, id) => {
      expect(await (s as PostgresRunStore).shared.acquireLease(owners.get(s)!, id)).toBe(true)
    },
    release: (s, id) => (s as PostgresRunStore).shared.releaseLeases(owners.get(s)!, [id]),
    takeOver: async (...ids) => {
      // A's lease lapses after 50 ms; B's sweep claims what it held.
      await sleep(100)
      expect((await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id).sort()).toEqual([...ids].sort())
    },
    fence: async (id) => (await db.unsafe(`SELECT lease_fence::int AS f FROM ${schema}.runs WHERE id = $1`, [id]))[0].f as number,
    app: await postgresItems(db),
  }
})

describe('fenced leases on PostgresRunStore', () => {
  it('taking a lease and claiming an orphan each move the fence on; renewing it does not', async () => {
    const { a, b, schema } = twoProcesses()
    const fence = async () => (await db.unsafe(`SELECT lease_fence::int AS f FROM ${schema}.runs WHERE id = 'r'`))[0].f as number
    await a.createRun(makeRun({ id: 'r', status: 'running' }))
    const first = await fence()
    expect(await a.shared.acquireLease('owner-a', 'r')).toBe(true)
    expect(await fence()).toBe(first + 1)
    expect(await a.shared.renewLeases('owner-a', ['r'])).toEqual(['r'])
    expect(await fence()).toBe(first + 1)
    await sleep(100)
    expect((await b.shared.claimOrphanedRuns('owner-b', 10)).map((run) => run.id)).toEqual(['r'])
    expect(await fence()).toBe(first + 2)
  })
})

describe('fenced leases in the task engine on PostgresRunStore', () => {
  it('a write that finds the lease lost aborts the attempt at once: a handler that catches the error runs no further step', async () => {
    const schema = `fence${++schemas}`
    const shared = new PostgresRunStore({ url, schema, leaseMs: 60_000 })
    opened.push(shared)
    await lostAttemptStopsAtOnce(shared, (id) =>
      db.unsafe(`UPDATE ${schema}.runs SET lease_owner = 'thief', lease_fence = lease_fence + 1 WHERE id = $1`, [id]),
    )
  })
})

describe('fenced leases across processes on PostgresRunStore', () => {
  it('a process stopped past leaseMs mid-attempt records nothing once continued: the run stays the one that took it over', async () => {
    const [a, b] = await Promise.all([startServer(url), startServer(url)])
    await a.call('hold')
    const id = await a.call<string>('trigger', { task: 'three' })
    const ran = async () => db<{ step: string; pid: number }[]>`SELECT step, pid FROM effects WHERE run_id = ${id}`
    // A is inside step "two" (step "one" is recorded): stop it there.
    await until(async () => (await ran()).some((row) => row.step === 'two' && row.pid === a.pid))
    process.kill(a.pid, 'SIGSTOP')
    try {
      // B takes the attempt over once A's lease lapses, and finishes the run.
      const done = await until(async () => {
        const run = await store.getRun(id)
        return run?.status === 'completed' && run
      }, 10_000)
      expect(done.result).toEqual({ one: a.pid, two: b.pid, three: b.pid, finishedBy: b.pid })
    } finally {
      process.kill(a.pid, 'SIGCONT')
    }
    // A's step "two" returns now; its attempt goes on with a lease B took.
    await until(async () => (await a.call<string[]>('logs')).some((line) => line.includes(`lost the lease on run ${id}`)), 5000)
    // Time for anything A would still write to land.
    await new Promise((resolve) => setTimeout(resolve, 300))

    const run = (await store.getRun(id))!
    expect(run.status).toBe('completed')
    expect(run.result).toEqual({ one: a.pid, two: b.pid, three: b.pid, finishedBy: b.pid })
    expect(Object.fromEntries(Object.entries(run.steps).map(([key, step]) => [key, step.output]))).toEqual({
      one: a.pid,
      two: b.pid,
      three: b.pid,
    })
    // One attempt, B's: A's ended with nothing recorded.
    expect(run.attempts).toHaveLength(1)
    // "one" ran once, "two" in both (A was inside it when it stopped), "three" only in B.
    const rows = (await ran()).map((row) => `${row.step} ${row.pid === a.pid ? 'A' : row.pid === b.pid ? 'B' : row.pid}`)
    expect(rows.sort()).toEqual(['one A', 'three B', 'two A', 'two B'])
    const lost = (await a.call<string[]>('logs')).filter((line) => line.includes('lost the lease'))
    expect(lost).toHaveLength(1)
    await Promise.all([a.close(), b.close()])
  })
})
