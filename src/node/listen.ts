/**
 * The srvx options the Node server listens with (the Bun and Deno servers call their runtime's own `serve`).
 */
export const LISTEN_OPTIONS = {
  // Listening waits for serve(), after the server's own listeners are in
  // place, and a failure to bind rejects there.
  manual: true,
  silent: true,
  // svc drains itself (./app-server.ts): 503 to late requests, WebSockets, task attempts.
  gracefulShutdown: false,
} as const

/**
 * A server could not listen because another process holds its port. The
 * message names the port and the fix, which depends on what chose the port:
 * the `port` option, `svc dev --port`, or a built server's `PORT`.
 */
export class PortInUseError extends Error {
  override name = 'PortInUseError'
  /** As Node, Bun and Deno name the failure. */
  readonly code = 'EADDRINUSE'
  readonly port: number
  readonly host: string

  constructor(port: number, host: string, fix: string, options?: ErrorOptions) {
    super(`port ${port} is already in use on ${host}: stop the process that listens there, or ${fix}`, options)
    this.port = port
    this.host = host
  }
}

/** The fix for a taken port of a server started from code. */
const PORT_OPTION_FIX = 'pass another `port` (0 picks a free one)'

/**
 * `error` as a PortInUseError when it is the EADDRINUSE of a listen on
 * `port` and `host` (Node, Bun and Deno all give it that code), naming `fix`;
 * any other error as it is.
 */
export function listenFailure(error: unknown, port: number, host: string | undefined, fix = PORT_OPTION_FIX): unknown {
  if (error instanceof PortInUseError) return new PortInUseError(error.port, error.host, fix, { cause: error.cause })
  if ((error as { code?: unknown } | null)?.code !== 'EADDRINUSE') return error
  return new PortInUseError(port, host || 'every interface', fix, { cause: error })
}
