/**
 * A transaction sent whole: `BEGIN`, its statements and `COMMIT` written to
 * one reserved connection together (pipelined), so that the batch waits
 * for one round trip and one commit however many statements it holds.
 * Reserved for the reason transaction.ts gives: nobody else writes to the
 * connection until it is released.
 *
 * Postgres runs the statements in order. One that fails aborts the
 * transaction: the statements after it fail too, and the `COMMIT` ends it
 * as a rollback, so nothing of it was written; the first failure is thrown.
 * The `postgres` driver sends a query when it is first awaited or
 * `execute()`d, so `statements` makes them without awaiting any, and they
 * are sent here, in order.
 */
import type { PendingQuery, Row, Sql } from 'postgres'
import { connectionFailed } from './transient.ts'

export async function inPipelinedTransaction<T extends readonly Row[]>(sql: Sql, statements: (tx: Sql) => PendingQuery<T>[]): Promise<T[]> {
  const reserved = await sql.reserve()
  // A connection that dropped is not released: transaction.ts says why.
  let dropped = false
  try {
    // Made before anything is sent: should making them throw, the connection goes back with no transaction open.
    const statementsMade = statements(reserved)
    const begin = reserved`BEGIN`.execute()
    const made = statementsMade.map((statement) => statement.execute())
    const commit = reserved`COMMIT`.execute()
    const settled = await Promise.allSettled([begin, ...made, commit])
    dropped = settled.some((outcome) => outcome.status === 'rejected' && connectionFailed(outcome.reason))
    for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason
    const ended = (settled[settled.length - 1] as PromiseFulfilledResult<{ command: string }>).value
    // A COMMIT of an aborted transaction answers ROLLBACK, and raises nothing.
    if (ended.command !== 'COMMIT') throw new Error(`the transaction ended with ${ended.command}, not COMMIT`)
    return settled.slice(1, -1).map((outcome) => (outcome as PromiseFulfilledResult<T>).value)
  } finally {
    if (!dropped) reserved.release()
  }
}
