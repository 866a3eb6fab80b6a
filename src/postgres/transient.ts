/**
 * Which errors of the `postgres` driver are the database's passing faults,
 * not a fault of the call: the store tries such a call again (store.ts,
 * `#run`) and, past its budget, answers `StoreUnavailableError` (503
 * `STORE_UNAVAILABLE`). Codes are the SQLSTATEs of the Postgres manual,
 * appendix A (https://www.postgresql.org/docs/current/errcodes-appendix.html),
 * the driver's own connection codes, and Node's socket errors.
 */

/** The driver's connection errors and the socket errors it passes on: no answer came back. */
const CONNECTION_ERRNOS = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/**
 * SQLSTATEs of a statement that did nothing and may go through when sent
 * again: too many connections (53300), a serialization failure (40001), a
 * deadlock's victim (40P01), a write to a server that became a standby in
 * a failover (25006), and a statement cancelled by an operator or a
 * timeout (57014).
 */
const PASSING_STATES = new Set(['53300', '40001', '40P01', '25006', '57014'])

/**
 * Whether `error` says the connection failed while a statement was out, so
 * that it may or may not have committed: the driver's errors of a
 * connection that closed or could not be used, a socket error, or a
 * SQLSTATE of a failed connection (class 08) or of a server shutting down
 * or terminating the session (57P01 to 57P05).
 */
export function connectionFailed(error: unknown): boolean {
  const code = codeOf(error)
  if (code === undefined) return false
  return code.startsWith('CONNECT') || CONNECTION_ERRNOS.has(code) || code.startsWith('08') || code.startsWith('57P')
}

/** Whether `error` is a passing fault of the database (see the file's comment), so the call may be tried again. */
export function isTransient(error: unknown): boolean {
  const code = codeOf(error)
  return code !== undefined && (PASSING_STATES.has(code) || connectionFailed(error))
}

/**
 * Whether `error` says no connection could be made at all: the server
 * refused or did not answer, or said it is starting up or shutting down
 * (57P03). The store stops sending calls until a probe gets through
 * (availability.ts). A session the server ended (57P01, a backend killed
 * or a server shutting down) is not this: the next connection may work.
 */
export function unreachable(error: unknown): boolean {
  const code = codeOf(error)
  return (
    code === 'ECONNREFUSED' ||
    code === 'CONNECT_TIMEOUT' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN' ||
    code === '57P03'
  )
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
