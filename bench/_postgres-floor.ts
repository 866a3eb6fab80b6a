/**
 * The floor under a durable job on Postgres, for bench/store.ts: per job,
 * one INSERT and one UPDATE, each its own commit, issued through the
 * `postgres` driver over `FLOOR_CONNECTIONS` connections (the jobs
 * graphile-worker's perfTest runs at once), with nothing else around them.
 * On a database with its durable defaults every commit waits for its WAL
 * to reach the disk; commits made at the same moment on different
 * connections share one flush, as Postgres groups them. What a job queue
 * or a durable run spends above this is its own work.
 */
import postgres from 'postgres'
import { newRunId } from '../src/runtime/tasks/base/ids.ts'
import { throughput } from './_store-measure.ts'

/** Connections the floor's statements go over. */
export const FLOOR_CONNECTIONS = 24

let tables = 0

/** Jobs/s of `count` jobs started together, on a fresh table: each inserted queued (its trigger), then updated completed (its end). */
export async function postgresFloor(url: string, count: number): Promise<number> {
  const sql = postgres(url, { max: FLOOR_CONNECTIONS, onnotice: () => {} })
  const table = sql(`floor_jobs_${++tables}`)
  try {
    await sql`CREATE TABLE ${table} (id text PRIMARY KEY, status text NOT NULL, record jsonb NOT NULL)`
    // Every connection open and its statements prepared, outside the time.
    await throughput(FLOOR_CONNECTIONS * 4, (i) => job(sql, table, `warm-${i}`))
    return await throughput(count, () => job(sql, table, newRunId()))
  } finally {
    await sql`DROP TABLE IF EXISTS ${table}`
    await sql.end()
  }
}

async function job(sql: postgres.Sql, table: postgres.Helper<string>, id: string): Promise<() => Promise<unknown>> {
  await sql`INSERT INTO ${table} (id, status, record) VALUES (${id}, 'queued', ${sql.json({ id, input: {} })})`
  return () => sql`UPDATE ${table} SET status = 'completed', record = record || ${sql.json({ ok: true })} WHERE id = ${id}`
}
