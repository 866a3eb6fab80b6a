// Flow control on one SQLite file shared by three real server processes:
// each takes a slot in one write transaction (`startQueued`, `debounceRun`),
// so together they never exceed a limit, and the process that frees a slot
// starts the next queued run, whichever process queued it. Each attempt
// records its start and end in a second SQLite file, numbered under that
// file's write lock: an attempt writes its start only once its run holds a
// slot, and its end before it gives the slot back, so the numbering orders
// them as they happened, whichever process ran them.
import { DatabaseSync } from 'node:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { startChild } from '../postgres/_child.ts'
import { mostOpen, until } from '../tasks/_helpers.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/sqlite-flow/server.ts', import.meta.url))
// Generous for two shared cores; only a hang reaches it.
const SETTLE_MS = 30_000

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-flow-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let files = 0
const open: { close(): void }[] = []
afterEach(() => {
  for (const handle of open.splice(0)) handle.close()
})

/** A fresh runs file and attempt log, three servers on them, and a store and log connection of the test's own. */
async function cluster() {
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
  const events = (ids: string[]) => {
    const wanted = new Set(ids)
    const rows = log.prepare('SELECT run_id, key, event FROM attempts ORDER BY seq').all() as {
      run_id: string
      key: string
      event: string
    }[]
    return rows.filter((row) => wanted.has(row.run_id))
  }
  /** Waits until `count` runs of `task` completed; names the statuses it saw when they do not. */
  const allCompleted = async (task: string, count: number) => {
    try {
      await until(async () => (await store.listRuns({ taskName: task, status: 'completed' })).length === count, SETTLE_MS)
    } catch {
      const tally = new Map<string, number>()
      for (const run of await store.listRuns({ taskName: task })) tally.set(run.status, (tally.get(run.status) ?? 0) + 1)
      const seen = [...tally].map(([status, n]) => `${n} ${status}`).join(', ') || 'none'
      throw new Error(`${count} runs of "${task}" did not all complete within ${SETTLE_MS} ms; their statuses: ${seen}`)
    }
  }
  return { servers, store, events, allCompleted }
}

/** How many attempts each run started. */
function startsPerRun(rows: { run_id: string; event: string }[]): Map<string, number> {
  const starts = new Map<string, number>()
  for (const row of rows) if (row.event === 'start') starts.set(row.run_id, (starts.get(row.run_id) ?? 0) + 1)
  return starts
}

describe('flow control across processes on one SQLite file', { timeout: 60_000 }, () => {
  it('60 runs with concurrency 2, triggered on three processes, each start once and never have more than 2 attempts open', async () => {
    const { servers, events, allCompleted } = await cluster()
    const ids = await Promise.all(
      Array.from({ length: 60 }, (_, n) => servers[n % 3].call<string>('trigger', { task: 'limited', payload: { n } })),
    )
    expect(new Set(ids).size).toBe(60)
    await allCompleted('limited', 60)
    const rows = events(ids)
    // The three processes raced to start them as they were triggered.
    expect(mostOpen(rows).all).toBe(2)
    expect(startsPerRun(rows)).toEqual(new Map(ids.map((id) => [id, 1])))
  })

  it('a run queued on one process starts on the process that frees its slot', async () => {
    const { servers, store, events, allCompleted } = await cluster()
    const [a, b] = servers
    const holders = [await a.call<string>('trigger', { task: 'limited', payload: { n: 1, hold: true } })]
    holders.push(await a.call<string>('trigger', { task: 'limited', payload: { n: 2, hold: true } }))
    // Both slots are taken once both attempts have started on a.
    await until(() => events(holders).length === 2, SETTLE_MS)
    const waiting = await b.call<string>('trigger', { task: 'limited', payload: { n: 3 } })
    expect(await store.getRun(waiting)).toMatchObject({ status: 'queued' })
    // b frees no slot and has nothing more to do: only a, when its attempts end, can start it.
    await a.call('release')
    await allCompleted('limited', 3)
    expect(await store.getRun(waiting)).toMatchObject({ result: { n: 3, by: a.pid } })
  })

  it('keyed concurrency across processes runs one attempt per key at once', async () => {
    const { servers, events, allCompleted } = await cluster()
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        servers[n % 3].call<string>('trigger', { task: 'keyed', payload: { user: ['a', 'b', 'c'][n % 3 === 0 ? 0 : n % 2 ? 1 : 2], n } }),
      ),
    )
    await allCompleted('keyed', 30)
    const rows = events(ids)
    expect(mostOpen(rows).perKey).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]),
    )
    expect(startsPerRun(rows)).toEqual(new Map(ids.map((id) => [id, 1])))
  })

  it('a rate limit of 3 starts per second holds for runs triggered on three processes', async () => {
    const { servers, store, allCompleted } = await cluster()
    const ids = await Promise.all(
      Array.from({ length: 9 }, (_, n) => servers[n % 3].call<string>('trigger', { task: 'rated', payload: { n } })),
    )
    await allCompleted('rated', 9)
    const runs = await Promise.all(ids.map((id) => store.getRun(id)))
    const starts = runs.map((run) => Date.parse(run!.startedAt!)).sort((a, b) => a - b)
    // A sliding window: any 4 starts in a row span at least the period.
    for (let i = 3; i < starts.length; i++) expect(starts[i] - starts[i - 3]).toBeGreaterThanOrEqual(1000)
  })

  it('debounced triggers for one key on three processes become one run with the last input', async () => {
    const { servers, store, events, allCompleted } = await cluster()
    const ids: string[] = []
    for (let n = 1; n <= 9; n++) ids.push(await servers[n % 3].call<string>('trigger', { task: 'digest', payload: { user: 'z', n } }))
    expect(new Set(ids).size).toBe(1)
    await allCompleted('digest', 1)
    expect((await store.getRun(ids[0]))?.result).toMatchObject({ n: 9 })
    expect(startsPerRun(events(ids))).toEqual(new Map([[ids[0], 1]]))
  })
})
