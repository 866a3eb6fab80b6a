/**
 * `svcjs/testing` on Postgres: the kit's cases (kit-contract.ts) on a
 * `PostgresRunStore`, a store several processes share, with the virtual
 * clock. Each case gets a schema of its own.
 */
import { beforeAll } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { kitContract } from '../testing/kit-contract.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('kit')
})

let schemas = 0
kitContract('Postgres', async () => {
  const store = new PostgresRunStore({ url, schema: `kit${++schemas}` })
  await store.ready()
  return store
})
