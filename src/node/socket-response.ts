/**
 * Answers written straight on a socket the HTTP server has handed over
 * (upgrade requests it will not upgrade, CONNECT), where no
 * `ServerResponse` exists.
 */
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'

/** A `{ error, code }` JSON answer. */
export function jsonResponse(status: number, code: string, error: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error, code }), { status, headers: { ...headers, 'content-type': 'application/json' } })
}

/**
 * Writes `res` with `Connection: close`, then closes the socket once it is
 * flushed: a client that never closes its side would otherwise hold it open.
 */
export async function writeResponse(socket: Duplex, res: Response): Promise<void> {
  const body = res.body ? Buffer.from(await res.arrayBuffer()) : Buffer.alloc(0)
  if (socket.destroyed) return
  let head = `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ''}\r\n`
  res.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection' && name !== 'transfer-encoding') head += `${name}: ${value}\r\n`
  })
  head += `content-length: ${body.length}\r\nconnection: close\r\n\r\n`
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]), () => socket.destroy())
}
