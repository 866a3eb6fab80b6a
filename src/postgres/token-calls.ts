/**
 * How `PostgresRunStore` keeps tokens (`putToken`, `getToken`,
 * `settleToken`; the settling statement is in tokens.ts). A token an
 * attempt creates is fenced by that attempt's lease.
 */
import type { Fragment, Sql } from 'postgres'
import { LeaseLostError } from '../runtime/errors.ts'
import type { TokenRecord } from '../runtime/tasks/store/store.ts'
import type { PostgresConnection } from './connection.ts'
import type { Fence } from './fences.ts'
import { settleTokenPg, tokenSettlement } from './tokens.ts'

/**
 * Inserts `token` unless one with its id is held, and resolves to the
 * token held either way. Under a lease held here on its run, a fence that
 * moved on rejects with `LeaseLostError`.
 */
export async function putTokenPg(conn: PostgresConnection, token: TokenRecord): Promise<TokenRecord> {
  const fence = conn.fences.of(token.runId)
  return conn.run(async (sql) => {
    const tokens = sql(conn.schema)
    // DO NOTHING: a replay must not reset a token that was settled meanwhile.
    const [row] = await sql<{ record: TokenRecord | null; leased: boolean }[]>`
      WITH lease AS (${leaseRow(sql, conn.schema, token.runId, fence)}), inserted AS (
        INSERT INTO ${tokens}.tokens (id, run_id, status, record)
        SELECT ${token.id}, ${token.runId}, ${token.status}, ${sql.json(token as never)}::jsonb FROM lease
        ON CONFLICT (id) DO NOTHING
        RETURNING record
      )
      SELECT coalesce((SELECT record FROM inserted), (SELECT record FROM ${tokens}.tokens WHERE id = ${token.id})) AS record,
        EXISTS (SELECT 1 FROM lease) AS leased`
    if (!row.leased) throw new LeaseLostError(token.runId)
    if (row.record) return row.record
    // The conflicting token was committed after this statement's snapshot
    // was taken, so the statement could not read it; a new one can.
    return (await getTokenPg(conn, token.id))!
  })
}

export function getTokenPg(conn: PostgresConnection, id: string): Promise<TokenRecord | undefined> {
  return conn.run(async (sql) => {
    const [row] = await sql<{ record: TokenRecord }[]>`SELECT record FROM ${sql(conn.schema)}.tokens WHERE id = ${id}`
    return row?.record
  })
}

/** Moves a waiting token on; the change is made once per call, so that every try sends the same. */
export async function settleTokenCall(
  conn: PostgresConnection,
  id: string,
  status: 'completed' | 'timed_out',
  payload: unknown,
): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
  const change = tokenSettlement(status, payload)
  return conn.run((sql, maybeWritten) => settleTokenPg(sql, conn.schema, id, change, maybeWritten))
}

/**
 * A query that yields one row while `fence` is the lease on run `runId`,
 * and none otherwise; with no fence, always one. The row is locked to the end of the statement's
 * transaction with `FOR KEY SHARE`, the lock a step's foreign key takes
 * anyway, which the `FOR UPDATE` of `acquireLease` and
 * `claimOrphanedRuns` waits for (or skips): a claim that moves the fence
 * comes after the write, or the write after the claim, and then sees the
 * fence moved (READ COMMITTED checks a row again that changed while the
 * write waited for it). A cancel or a resume, which move the fence too,
 * take no such lock: what a write that races them leaves (a step of a
 * cancelled run, a deadline timer of a resumed one) changes nothing.
 */
function leaseRow(sql: Sql, schema: string, runId: string, fence: Fence | undefined): Fragment {
  if (fence === undefined) return sql`SELECT 1`
  return sql`
    SELECT 1 FROM ${sql(schema)}.runs
    WHERE id = ${runId} AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint
    FOR KEY SHARE`
}
