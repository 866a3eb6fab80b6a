/**
 * `ctx.step.transaction` on the stores whose SQL runs synchronously
 * (`node:sqlite`, a Durable Object's `ctx.storage.sql`): the handle the
 * step's function gets, and the check that the function finished inside
 * the transaction.
 *
 * The handle lives only while the function runs, and refuses the
 * statements that would end or split the step's transaction (it is the
 * store's: it holds the step's record and, on SQLite, other runs' writes).
 *
 * Edge-safe: no `node:` import.
 */
import type { SqlParam, SqlTransaction } from '../../types/task-context.ts'

/** How a store runs one statement of the app's on its connection. */
export interface SqlConnection {
  query(sql: string, params: SqlParam[]): Record<string, unknown>[]
  /** Runs a write; how many rows it changed. */
  run(sql: string, params: SqlParam[]): number
}

const CONTROL = new Set(['begin', 'commit', 'end', 'rollback', 'savepoint', 'release'])

/** A statement's first keyword, lowercased, after any whitespace and comments: one pass. */
export function firstKeyword(sql: string): string {
  let i = 0
  while (i < sql.length) {
    const c = sql[i]
    if (c === ' ' || c === '\n' || c === '\t' || c === '\r' || c === '\f') i++
    else if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i)
      i = end === -1 ? sql.length : end + 1
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2)
      i = end === -1 ? sql.length : end + 2
    } else break
  }
  const word = /^[A-Za-z]+/.exec(sql.slice(i, i + 16))
  return word ? word[0].toLowerCase() : ''
}

/** A `SqlTransaction` on `connection`, and the switch that ends it: once closed, every statement through it throws. */
function openHandle(connection: SqlConnection, key: string): { tx: SqlTransaction; close(): void } {
  let open = true
  const check = (sql: string): void => {
    if (!open) {
      throw new Error(
        `ctx.step.transaction("${key}"): its transaction is over (committed or rolled back); the handle works only while the step's function runs`,
      )
    }
    if (typeof sql !== 'string') throw new TypeError(`ctx.step.transaction("${key}"): a statement must be a string`)
    const keyword = firstKeyword(sql)
    if (CONTROL.has(keyword)) {
      throw new Error(
        `ctx.step.transaction("${key}"): ${keyword.toUpperCase()} is not allowed inside a transactional step; the step's transaction commits when its function returns and rolls back when it throws`,
      )
    }
  }
  const tx: SqlTransaction = {
    query<Row extends Record<string, unknown>>(sql: string, ...params: SqlParam[]): Row[] {
      check(sql)
      return connection.query(sql, params) as Row[]
    },
    run(sql: string, ...params: SqlParam[]) {
      check(sql)
      return { changes: connection.run(sql, params) }
    },
  }
  return { tx, close: () => void (open = false) }
}

/**
 * Runs `work` with a `SqlTransaction` on `connection`, which is open only
 * while `work` runs. `work` must return a value, not a promise: the
 * transaction cannot stay open across an await on these databases.
 */
export function runSqlTransaction<T>(
  connection: SqlConnection,
  key: string,
  database: string,
  work: (tx: SqlTransaction) => T | Promise<T>,
): T {
  const handle = openHandle(connection, key)
  try {
    const output = work(handle.tx)
    if (isThenable(output)) {
      // Settled by nobody else: its rejection (a statement after the await) is no one's to report.
      output.then(undefined, () => {})
      throw new TypeError(
        `ctx.step.transaction("${key}"): on ${database} the step's function must be synchronous (it returned a promise): ` +
          'statements run synchronously there and the transaction cannot stay open across an await. ' +
          'Fetch what it needs in a ctx.step.run before it, and pass the result in',
      )
    }
    return output
  } finally {
    handle.close()
  }
}

/**
 * `runSqlTransaction` for a store that can hold its transaction open
 * across awaits (`SqliteRunStore`, which holds its other writes meanwhile):
 * `work` may return a promise, and then so does this. One that has not
 * settled `limitMs` after it began fails the step with an error saying so,
 * and its handle closes, so nothing it runs later reaches the database; the
 * caller rolls back. A `work` that returns a value is answered at once,
 * with no promise, as `runSqlTransaction` does.
 */
export function runSqlTransactionBounded<T>(
  connection: SqlConnection,
  key: string,
  work: (tx: SqlTransaction) => T | Promise<T>,
  limitMs: number,
): T | Promise<T> {
  const handle = openHandle(connection, key)
  let output: T | Promise<T>
  try {
    output = work(handle.tx)
  } catch (error) {
    handle.close()
    throw error
  }
  if (!isThenable(output)) {
    handle.close()
    return output
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `ctx.step.transaction("${key}"): its function was still running ${limitMs} ms after it began, while its transaction held the database's other writes; it was rolled back. ` +
              'Keep slow work (a network call) out of the transaction, in a ctx.step.run before it, or raise transactionTimeoutMs',
          ),
        ),
      limitMs,
    )
  })
  // A function that settles after the limit is no one's to report.
  Promise.resolve(output).then(undefined, () => {})
  return Promise.race([output, late]).finally(() => {
    clearTimeout(timer)
    handle.close()
  })
}

/** Whether `value` is a promise, or acts as one: what `await` would wait for. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
  )
}
