/**
 * Answers written straight on a socket the HTTP server has handed over
 * (upgrade requests it will not upgrade, CONNECT), where no
 * `ServerResponse` exists.
 */
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'

/** A `{ error, code }` JSON answer. */
export function jsonResponse(status: number, code: string, error: string, headers: Record<string, string> = {}): Response {
  const body = new TextEncoder().encode(JSON.stringify({ error, code }))
  return new Response(body, {
    status,
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(body.byteLength) },
  })
}

/**
 * Writes `res` with `Connection: close`, then closes the socket. A body of a
 * declared length (the answers above) goes with its `Content-Length`; any
 * other is sent as it comes, in chunks (RFC 9112 §7.1), never gathered
 * first: a route may answer with a stream that never ends (Server-Sent
 * Events), and the client, not the body, decides when that is over. When
 * the socket closes first, the body is cancelled, so its source stops.
 */
export async function writeResponse(socket: Duplex, res: Response): Promise<void> {
  const body = res.body
  if (socket.destroyed) return void (await body?.cancel().catch(() => {}))
  let head = `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ''}\r\n`
  res.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection' && name !== 'transfer-encoding') head += `${name}: ${value}\r\n`
  })
  if (!body || res.headers.has('content-length')) {
    const bytes = body ? Buffer.from(await res.arrayBuffer()) : Buffer.alloc(0)
    if (socket.destroyed) return
    head += `content-length: ${bytes.length}\r\nconnection: close\r\n\r\n`
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), bytes]), () => socket.destroy())
    return
  }
  socket.write(`${head}transfer-encoding: chunked\r\nconnection: close\r\n\r\n`, 'latin1')
  const reader = body.getReader()
  const gone = () => void reader.cancel().catch(() => {})
  socket.once('close', gone)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done || socket.destroyed) break
      if (value.byteLength === 0) continue
      socket.write(`${value.byteLength.toString(16)}\r\n`, 'latin1')
      socket.write(value)
      // A client that does not read holds back the stream, not the server's memory.
      if (!socket.write('\r\n', 'latin1')) await drained(socket)
    }
  } catch {
    // The body failed, or was cancelled because the client went: nothing more to send.
    socket.destroy()
    return
  } finally {
    socket.off('close', gone)
  }
  if (!socket.destroyed) socket.end('0\r\n\r\n', 'latin1', () => socket.destroy())
}

function drained(socket: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done)
      socket.off('close', done)
      resolve()
    }
    socket.on('drain', done)
    socket.on('close', done)
  })
}
