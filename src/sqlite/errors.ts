/**
 * What `SqliteRunStore` makes of the errors SQLite raises. A file that
 * cannot be used right now (full, locked past the busy timeout, read-only,
 * failing) is a `StoreUnavailableError`, 503 `STORE_UNAVAILABLE`, whose
 * message names the cause and what to do. Result codes:
 * https://www.sqlite.org/rescode.html
 */
import { StoreUnavailableError } from '../runtime/errors.ts'

const SQLITE_BUSY = 5
const SQLITE_NOMEM = 7
const SQLITE_READONLY = 8
const SQLITE_INTERRUPT = 9
const SQLITE_IOERR = 10
const SQLITE_FULL = 13

/**
 * What SQLite says of each primary result code svc looks at
 * (`sqlite3_errstr`, https://www.sqlite.org/c3ref/errcode.html).
 */
const MESSAGES: ReadonlyMap<string, number> = new Map([
  ['database is locked', SQLITE_BUSY],
  ['out of memory', SQLITE_NOMEM],
  ['attempt to write a readonly database', SQLITE_READONLY],
  ['interrupted', SQLITE_INTERRUPT],
  ['disk I/O error', SQLITE_IOERR],
  ['database or disk is full', SQLITE_FULL],
])

/**
 * The result code of an error `node:sqlite` threw: its `errcode`, which may
 * be an extended code, else undefined. Deno's `node:sqlite` leaves `errcode`
 * off the errors of `DatabaseSync#exec` (those of its statements carry it),
 * with no other property that holds the code: there it is read back from
 * the message, which for the codes above is SQLite's own text for the code.
 */
function errorCode(error: unknown): number | undefined {
  const { errcode, code, message } = (error ?? {}) as { errcode?: unknown; code?: unknown; message?: unknown }
  if (typeof errcode === 'number') return errcode
  return code === 'ERR_SQLITE_ERROR' && typeof message === 'string' ? MESSAGES.get(message) : undefined
}

/** The primary result code of an error `node:sqlite` threw, else undefined. */
function resultCode(error: unknown): number | undefined {
  const code = errorCode(error)
  return code === undefined ? undefined : code & 0xff
}

/**
 * The error a store call rejects with for `error`: a `StoreUnavailableError`
 * when the file cannot be used right now, else `error` itself.
 */
export function storeError(error: unknown, where: string, busyTimeoutMs: number): unknown {
  const code = resultCode(error)
  if (code === undefined) return error
  const unavailable = (what: string, name: string, todo: string) =>
    new StoreUnavailableError(
      `${where}: ${what} (${name}: ${(error as Error).message}). Nothing of the call that failed was written; ${todo}`,
      { cause: error },
    )
  switch (code) {
    case SQLITE_FULL:
      return unavailable('the database file is full', 'SQLITE_FULL', 'free disk space, then retry')
    case SQLITE_BUSY:
      return unavailable(
        `the database file stayed locked by another connection for longer than busyTimeoutMs (${busyTimeoutMs} ms)`,
        'SQLITE_BUSY',
        'retry; if it keeps happening, look for a process that holds a write transaction open, or raise busyTimeoutMs',
      )
    case SQLITE_READONLY:
      return unavailable(
        'the database file cannot be written',
        'SQLITE_READONLY',
        'make the file, its -wal and -shm files and their directory writable by this process, then retry',
      )
    case SQLITE_IOERR:
      return unavailable(
        'reading or writing the database file failed',
        `SQLITE_IOERR, code ${errorCode(error)}`,
        'check the disk and the file, then retry',
      )
    default:
      return error
  }
}

/**
 * Whether SQLite may have rolled back the whole transaction on `error`
 * (https://www.sqlite.org/lang_transaction.html, "Response To Errors Within
 * A Transaction"): for the Node versions whose `DatabaseSync` cannot say
 * (`isTransaction` came in Node 22.16).
 */
export function mayEndTransaction(error: unknown): boolean {
  const code = resultCode(error)
  return code === SQLITE_FULL || code === SQLITE_IOERR || code === SQLITE_BUSY || code === SQLITE_NOMEM || code === SQLITE_INTERRUPT
}
