// Flow control on PostgresRunStore: the store contract's flow part, and
// limits that hold across three real server processes on one database
// (flow-processes-contract.ts). Each attempt records its start and end in a
// table, numbered by a sequence: an attempt can only start once the run
// before it finished, so the numbering orders them as they happened,
// whichever process ran them.
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { afterAll, beforeAll } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { flowStoreContract } from '../tasks/flow-store-contract.ts'
import { type AttemptEvent, flowProcessesContract } from '../tasks/flow-processes-contract.ts'
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

flowProcessesContract('PostgresRunStore', async () => ({
  servers: await Promise.all([startServer(), startServer(), startServer()]),
  store,
  events: (ids) => db<AttemptEvent[]>`
    SELECT run_id, key, event FROM attempts WHERE run_id = ANY(${ids}::text[]) ORDER BY seq`,
}))
