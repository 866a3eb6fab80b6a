/**
 * The seam between the SQL the SQLite-family stores share and the driver
 * each of them runs it on. A shared operation is a procedure: a generator
 * that yields each statement it needs, with its parameters, and is handed
 * back that statement's rows. Deciding what to run stays in the procedure;
 * running it is the store's:
 *
 * - a store on a synchronous driver (`node:sqlite`, a Durable Object's
 *   `ctx.storage.sql`) runs it with `runProcedure`, inside its own atomic
 *   block, with no promise and no turn of the event loop per statement;
 * - a store on an asynchronous driver (D1, libSQL) runs the same procedure
 *   with `runProcedureAsync`, awaiting each statement, inside a transaction
 *   of its own that keeps other writers out until it commits (the
 *   procedures read, then write what they read).
 *
 * Edge-safe: no `node:` import.
 */

/** A value bound to a statement's parameter. */
export type SqlValue = string | number | null

/** Rows as a driver hands them back, one object per row keyed by column. */
export type SqlRows = Record<string, unknown>[]

/** One statement a procedure asks for. */
export interface SqlStatement {
  /** Whether it reads rows (`all`); a write is answered with no rows. */
  readonly read: boolean
  readonly text: string
  readonly params: readonly SqlValue[]
}

/** A shared operation on the tables of `schema.ts`: yields statements, gets their rows, returns `T`. */
export type SqlProcedure<T> = Generator<SqlStatement, T, SqlRows>

/** A statement whose rows the procedure reads. */
export function read(text: string, ...params: SqlValue[]): SqlStatement {
  return { read: true, text, params }
}

/** A statement that writes. */
export function write(text: string, ...params: SqlValue[]): SqlStatement {
  return { read: false, text, params }
}

/**
 * How a store on a synchronous driver runs one statement: `all` reads rows,
 * `run` writes. The parameters come as the statement holds them, an array
 * a driver spreads once into its own call.
 */
export interface SqlRunner {
  all(query: string, params: readonly SqlValue[]): SqlRows
  run(query: string, params: readonly SqlValue[]): void
}

/** `SqlRunner` on a driver that may answer later: each call may return a promise, which is awaited. */
export interface AsyncSqlRunner {
  all(query: string, params: readonly SqlValue[]): SqlRows | Promise<SqlRows>
  run(query: string, params: readonly SqlValue[]): unknown
}

// What a write is answered with; a procedure never changes it.
const NO_ROWS = Object.freeze([]) as unknown as SqlRows

/**
 * Runs `procedure` to its end on a synchronous driver and returns what it
 * returns. A statement that throws is thrown into the procedure, which may
 * catch it; otherwise it propagates to the caller, whose atomic block takes
 * back what the procedure wrote.
 */
export function runProcedure<T>(procedure: SqlProcedure<T>, sql: SqlRunner): T {
  let at = procedure.next()
  while (!at.done) {
    const { read, text, params } = at.value
    let rows: SqlRows
    try {
      if (read) rows = sql.all(text, params)
      else {
        sql.run(text, params)
        rows = NO_ROWS
      }
    } catch (error) {
      at = procedure.throw(error)
      continue
    }
    at = procedure.next(rows)
  }
  return at.value
}

/** `runProcedure` on a driver whose calls may answer later: each statement is awaited before the next is asked for. */
export async function runProcedureAsync<T>(procedure: SqlProcedure<T>, sql: AsyncSqlRunner): Promise<T> {
  let at = procedure.next()
  while (!at.done) {
    const { read, text, params } = at.value
    let rows: SqlRows
    try {
      if (read) rows = await sql.all(text, params)
      else {
        await sql.run(text, params)
        rows = NO_ROWS
      }
    } catch (error) {
      at = procedure.throw(error)
      continue
    }
    at = procedure.next(rows)
  }
  return at.value
}
