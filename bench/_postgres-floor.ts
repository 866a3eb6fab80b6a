/**
 * The floor under a durable job on Postgres, for bench/store.ts: per job,
 * one INSERT and one UPDATE, each its own commit, issued through the
 * `postgres` driver over `FLOOR_CONNECTIONS` connections (the jobs
 * graphile-worker's perfTest runs at once), with nothing else around them.
 * On a database with its durable defaults every commit waits for its WAL
 * to reach the disk; commits made at the same moment on different
 * connections share one flush, as Postgres groups them. What a job queue
 * or a durable run spends above this is its own work.
 *
 * The batched floor (`postgresBatchedFloor`) is the same writes for an
 * engine that groups them: `BATCH` jobs a statement, each statement its
 * own commit (one multi-row INSERT, then one UPDATE of those rows), the
 * batches in flight together over the same connections. It is the
 * ceiling for an engine that batches, as svc's Postgres store does.
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

/** Jobs a statement of the batched floor. */
export const BATCH = 100

/** Jobs/s of `count` jobs started together in batches of `BATCH`, on a fresh table: each batch inserted queued, then updated completed. */
export async function postgresBatchedFloor(url: string, count: number): Promise<number> {
  const sql = postgres(url, { max: FLOOR_CONNECTIONS, onnotice: () => {} })
  const table = sql(`floor_batched_${++tables}`)
  const batches = Math.ceil(count / BATCH)
  const batchOf = (prefix: string) => Array.from({ length: BATCH }, (_, i) => `${prefix}-${i}`)
  try {
    await sql`CREATE TABLE ${table} (id text PRIMARY KEY, status text NOT NULL, record jsonb NOT NULL)`
    await throughput(FLOOR_CONNECTIONS, (i) => batch(sql, table, batchOf(`warm-${i}`)))
    const perSecond = await throughput(batches, () => batch(sql, table, batchOf(newRunId())))
    return perSecond * BATCH
  } finally {
    await sql`DROP TABLE IF EXISTS ${table}`
    await sql.end()
  }
}

async function batch(sql: postgres.Sql, table: postgres.Helper<string>, ids: string[]): Promise<() => Promise<unknown>> {
  const rows = ids.map((id) => ({ id, status: 'queued', record: sql.json({ id, input: {} }) }))
  await sql`INSERT INTO ${table} ${sql(rows as never)}`
  return () => sql`UPDATE ${table} SET status = 'completed', record = record || ${sql.json({ ok: true })} WHERE id = ANY(${ids})`
}

async function job(sql: postgres.Sql, table: postgres.Helper<string>, id: string): Promise<() => Promise<unknown>> {
  await sql`INSERT INTO ${table} (id, status, record) VALUES (${id}, 'queued', ${sql.json({ id, input: {} })})`
  return () => sql`UPDATE ${table} SET status = 'completed', record = record || ${sql.json({ ok: true })} WHERE id = ${id}`
}
