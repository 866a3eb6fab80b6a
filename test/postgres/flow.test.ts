// Flow control on PostgresRunStore: the store contract's flow part, and
// limits that hold across three real server processes on one database.
// Each attempt records its start and end in a table, numbered by a
// sequence: an attempt can only start once the run before it finished, so
// the numbering orders them as they happened, whichever process ran them.
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { flowStoreContract } from '../tasks/flow-store-contract.ts'
import { mostOpen, until } from '../tasks/_helpers.ts'
import { startChild } from './_child.ts'
import { createDatabase } from './_pg.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/postgres-cluster/flow-server.ts', import.meta.url))

let url: string
let db: postgres.Sql
let store: PostgresRunStore
beforeAll(async () => {
  url = await createDatabase('flow')
  store = new PostgresRunStore({ url })
  await store.ready()
  db = postgres(url, { onnotice: () => {} })
  await db`CREATE TABLE attempts (seq bigserial PRIMARY KEY, run_id text NOT NULL, key text NOT NULL, event text NOT NULL, pid integer NOT NULL)`
})
afterAll(async () => {
  await store.close()
  await db.end()
  await Promise.all(contractStores.splice(0).map((s) => s.close()))
})

let schemas = 0
const contractStores: PostgresRunStore[] = []
flowStoreContract('PostgresRunStore', () => {
  const s = new PostgresRunStore({ url, schema: `flow${++schemas}` })
  contractStores.push(s)
  return s
})

const startServer = () => startChild(SCRIPT, [url])

/** The most attempts of these runs open at once, in all and per key, in the order the table numbered them. */
async function overlap(ids: string[]): Promise<{ all: number; perKey: Map<string, number> }> {
  const rows = await db<{ key: string; event: string }[]>`
    SELECT key, event FROM attempts WHERE run_id = ANY(${ids}::text[]) ORDER BY seq`
  return mostOpen(rows)
}

async function allCompleted(task: string, count: number): Promise<void> {
  await until(async () => (await store.listRuns({ taskName: task, status: 'completed' })).length === count, 60_000)
}

describe('flow control across processes on PostgresRunStore', () => {
  it('60 runs with concurrency 2, triggered on three processes, never have more than 2 attempts open', async () => {
    const servers = await Promise.all([startServer(), startServer(), startServer()])
    const ids = await Promise.all(
      Array.from({ length: 60 }, (_, n) => servers[n % 3].call<string>('trigger', { task: 'limited', payload: { n } })),
    )
    await allCompleted('limited', 60)
    const seen = await overlap(ids)
    // The three processes raced to start them as they were triggered.
    expect(seen.all).toBe(2)
    const [{ n }] = await db<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM attempts WHERE run_id = ANY(${ids}::text[]) AND event = 'start'`
    expect(n).toBe(60)
  })

  it('keyed concurrency across processes runs one attempt per key at once', async () => {
    const servers = await Promise.all([startServer(), startServer(), startServer()])
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        servers[n % 3].call<string>('trigger', { task: 'keyed', payload: { user: ['a', 'b', 'c'][n % 3 === 0 ? 0 : n % 2 ? 1 : 2], n } }),
      ),
    )
    await allCompleted('keyed', 30)
    const seen = await overlap(ids)
    expect(seen.perKey).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]),
    )
  })

  it('a rate limit of 3 starts per second holds for runs triggered on three processes', async () => {
    const servers = await Promise.all([startServer(), startServer(), startServer()])
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
    const servers = await Promise.all([startServer(), startServer(), startServer()])
    const ids: string[] = []
    for (let n = 1; n <= 9; n++) ids.push(await servers[n % 3].call<string>('trigger', { task: 'digest', payload: { user: 'z', n } }))
    expect(new Set(ids).size).toBe(1)
    await allCompleted('digest', 1)
    expect((await store.getRun(ids[0]))?.result).toMatchObject({ n: 9 })
  })
})
