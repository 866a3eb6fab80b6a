/**
 * Liveness of hot-route WebSockets. Every interval each open connection is
 * pinged (RFC 6455 §5.5.2; clients answer with a pong, §5.5.3), and one
 * that sent nothing since the previous sweep, not even the pong to that
 * ping, is dropped: a client that vanished without a closing handshake (a
 * laptop shut, a network gone) frees its socket within two intervals. The
 * pings also keep a quiet but live connection open through proxies and load
 * balancers, which close connections idle for about a minute.
 *
 * crossws can run such a sweep itself, but it learns that a connection is
 * alive from a second `message` listener, which every message then pays
 * for. Here the sweep reads the socket's count of bytes received, which
 * costs nothing per message; any byte counts, a pong, a ping, a message or
 * part of one.
 */

/** How often connections are pinged; a silent one is dropped after two. The default of crossws, which svc used before. */
export const LIVENESS_INTERVAL_MS = 30_000

/** A connection the sweep watches. */
export interface Watched {
  /** Bytes received on the connection's socket so far. */
  bytesRead(): number
  ping(): void
  /** Drops the connection without a closing handshake. */
  terminate(): void
}

export interface LivenessSweep {
  watch(connection: Watched): void
  unwatch(connection: Watched): void
  stop(): void
}

export function createLivenessSweep(intervalMs: number = LIVENESS_INTERVAL_MS): LivenessSweep {
  /** Each connection's byte count at the last sweep; -1 before its first. */
  const seen = new Map<Watched, number>()
  const timer = setInterval(() => {
    for (const [connection, before] of seen) {
      const now = connection.bytesRead()
      if (now === before) {
        seen.delete(connection)
        connection.terminate()
        continue
      }
      seen.set(connection, now)
      connection.ping()
    }
  }, intervalMs)
  // Open connections keep the process alive, not the sweep.
  timer.unref()
  return {
    watch: (connection) => void seen.set(connection, -1),
    unwatch: (connection) => void seen.delete(connection),
    stop: () => clearInterval(timer),
  }
}
