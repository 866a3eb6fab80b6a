/**
 * `RunStore.settleToken` on Postgres (`PostgresRunStore`): one compare-and-set
 * statement, which moves only a waiting token. Sent again after its
 * connection dropped (`maybeWritten`), the call may find the token settled
 * by its own earlier landing, which it tells by the `settledAt` it wrote.
 */
import type { Sql } from 'postgres'
import type { TokenRecord } from '../runtime/tasks/store/store.ts'

/** The change a settle writes into the token's record: made once per call, so that every try sends the same. */
export function tokenSettlement(status: 'completed' | 'timed_out', payload: unknown): Record<string, unknown> {
  const change: Record<string, unknown> = { status, settledAt: new Date().toISOString() }
  if (status === 'completed' && payload !== undefined) change.payload = payload
  return change
}

export async function settleTokenPg(
  sql: Sql,
  schema: string,
  id: string,
  change: Record<string, unknown>,
  maybeWritten: boolean,
): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
  const tokens = sql(schema)
  const [row] = await sql<{ record: TokenRecord }[]>`
    UPDATE ${tokens}.tokens SET status = ${change.status as string}, record = record || ${sql.json(change as never)}::jsonb
    WHERE id = ${id} AND status = 'waiting'
    RETURNING record`
  if (row) return { settled: true, token: row.record }
  const [held] = await sql<{ record: TokenRecord }[]>`SELECT record FROM ${tokens}.tokens WHERE id = ${id}`
  const token = held?.record
  return token && { settled: maybeWritten && token.settledAt === change.settledAt && token.status === change.status, token }
}
