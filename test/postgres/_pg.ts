// Test files reach the run's embedded Postgres (see _global-setup.ts) here;
// each file works in a database of its own.
import postgres from 'postgres'
import { beforeAll, inject } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'

let databases = 0

/** Creates an empty database on the shared server and resolves to its URL. */
export async function createDatabase(prefix: string): Promise<string> {
  const admin = new URL(inject('postgresUrl'))
  const name = `${prefix}_${process.pid}_${++databases}`.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  const sql = postgres(admin.href, { onnotice: () => {} })
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await sql.end()
  }
  admin.pathname = `/${name}`
  return admin.href
}

/**
 * A factory of `PostgresRunStore`s for suites that want a store per case:
 * one database for the file (made before its cases), a schema per store.
 */
export function storePerCase(prefix: string): () => Promise<PostgresRunStore> {
  let url: string
  let schemas = 0
  beforeAll(async () => {
    url = await createDatabase(prefix)
  })
  return async () => {
    const store = new PostgresRunStore({ url, schema: `${prefix}${++schemas}` })
    await store.ready()
    return store
  }
}
