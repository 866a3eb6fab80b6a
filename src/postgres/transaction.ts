/**
 * Transactions on the store's pool. Each runs on a connection of its own,
 * taken idle from the pool (`sql.reserve()`), with BEGIN, COMMIT and
 * ROLLBACK sent on it; never through `sql.begin`. In the `postgres` driver
 * (3.4.9), `sql.begin` under load can write BEGIN to a busy connection
 * without reserving it (a pipelining race: porsager/postgres#823, #1189):
 * the call fails with UNSAFE_TRANSACTION, and the transaction can stay open
 * on a connection that other queries then use. A reserved connection is
 * one nobody else writes to until it is released.
 */
import type { Sql } from 'postgres'
import { connectionFailed } from './transient.ts'

/** What the app's function of `ctx.step.transaction` is given on Postgres: the driver's `sql`, on the step's connection, inside its transaction. */
export type PostgresTransaction = Sql

/**
 * Runs `fn` in a transaction on a reserved connection: committed once it
 * resolves, rolled back when it throws.
 *
 * A connection that dropped meanwhile ended its transaction on the server,
 * and is neither written to nor released: the driver (3.4.9) has already
 * put it back among its closed connections, to connect again, and both a
 * ROLLBACK sent on it and a release (which hands it out as open) end in an
 * uncaught TypeError from a timer of the driver's own, writing to a socket
 * that is gone (porsager/postgres#1208).
 */
export async function inTransaction<T>(sql: Sql, fn: (tx: Sql) => Promise<T>): Promise<T> {
  const reserved = await sql.reserve()
  let dropped = false
  try {
    await reserved`BEGIN`
    let result: T
    try {
      result = await fn(reserved)
    } catch (error) {
      // Otherwise a failed ROLLBACK is not the error to report.
      if (!connectionFailed(error)) await reserved`ROLLBACK`.catch(() => {})
      throw error
    }
    await reserved`COMMIT`
    return result
  } catch (error) {
    dropped = connectionFailed(error)
    throw error
  } finally {
    if (!dropped) reserved.release()
  }
}

const NOT_IN_A_STEP = new Set(['begin', 'reserve', 'release', 'end', 'close', 'listen', 'subscribe'])

/**
 * The handle the app's function gets: `tx` as it is, but for the calls that
 * would leave the step's transaction or connection, which throw.
 */
export function stepTransaction(tx: Sql, key: string): PostgresTransaction {
  return new Proxy(tx, {
    get(target, name, receiver) {
      if (typeof name === 'string' && NOT_IN_A_STEP.has(name)) {
        return () => {
          throw new Error(
            `ctx.step.transaction("${key}"): tx.${name}() is not available inside a transactional step; its statements run in the step's transaction, which commits when the function returns`,
          )
        }
      }
      return Reflect.get(target, name, receiver)
    },
  })
}

/**
 * Holds, to the commit of transaction `tx`, the lock of `what` of run
 * `runId` in `schema`: the next transaction to take it waits, and then
 * sees what this one wrote (a bound on the signals or updates a run holds,
 * counted before an insert, stays a bound under concurrent puts).
 */
export async function holdRunLock(tx: Sql, schema: string, what: string, runId: string): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`${schema}/${what}/${runId}`}, 0))`
}
