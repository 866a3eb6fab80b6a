// Flow control on one SQLite file shared by three real server processes:
// each takes a slot in one write transaction (`startQueued`,
// `debounceRun`), so together they never exceed a limit
// (flow-processes-contract.ts), and the process that frees a slot starts
// the next queued run, whichever process queued it. Each attempt records
// its start and end in a second SQLite file, numbered by AUTOINCREMENT
// under that file's write lock.
import { DatabaseSync } from 'node:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { startChild } from '../postgres/_child.ts'
import { until } from '../tasks/_helpers.ts'
import { type AttemptEvent, allCompleted, type FlowCluster, flowProcessesContract } from '../tasks/flow-processes-contract.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-flow/server.ts', import.meta.url))

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-flow-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let files = 0
// A store's close() returns a promise, a raw connection's returns nothing: each is awaited.
const open: { close(): unknown }[] = []
afterEach(async () => {
  for (const handle of open.splice(0)) await handle.close()
})

/** Three servers on a fresh runs file and attempt log, and a store and log connection of the test's own. */
async function cluster(): Promise<FlowCluster> {
  const n = ++files
  const runsPath = join(dir, `runs-${n}.db`)
  const logPath = join(dir, `attempts-${n}.db`)
  const log = new DatabaseSync(logPath)
  open.push(log)
  log.exec(`PRAGMA journal_mode = WAL;
    CREATE TABLE attempts (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, key TEXT NOT NULL, event TEXT NOT NULL, pid INTEGER NOT NULL)`)
  const servers = await Promise.all([0, 1, 2].map(() => startChild(SCRIPT, [runsPath, logPath])))
  const store = new SqliteRunStore({ path: runsPath })
  open.push(store)
  const select = log.prepare('SELECT run_id, key, event FROM attempts ORDER BY seq')
  const events = (ids: string[]) => {
    const wanted = new Set(ids)
    return (select.all() as unknown as AttemptEvent[]).filter((row) => wanted.has(row.run_id))
  }
  return { servers, store, events }
}

flowProcessesContract('one SQLite file', cluster)

describe('flow control across processes on one SQLite file, which no process sweeps', () => {
  it('a run queued on one process starts on the process that frees its slot', async () => {
    const { servers, store, events } = await cluster()
    const [a, b] = servers
    const holders = [await a.call<string>('trigger', { task: 'limited', payload: { n: 1, hold: true } })]
    holders.push(await a.call<string>('trigger', { task: 'limited', payload: { n: 2, hold: true } }))
    // Both slots are taken once both attempts have started on a.
    await until(async () => (await events(holders)).length === 2, 30_000)
    const waiting = await b.call<string>('trigger', { task: 'limited', payload: { n: 3 } })
    expect(await store.getRun(waiting)).toMatchObject({ status: 'queued' })
    // b frees no slot and has nothing more to do: only a, when its attempts end, can start it.
    await a.call('release')
    await allCompleted(store, 'limited', 3)
    expect(await store.getRun(waiting)).toMatchObject({ result: { n: 3, by: a.pid } })
  })
})
