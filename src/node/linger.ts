/**
 * Lingering close (RFC 9112 §9.6) for a connection whose request body is
 * still arriving when the answer is sent, as with a 413 for an upload over
 * the body limit. Closing at once makes the server's TCP stack answer the
 * bytes that keep coming with a reset, which can erase the answer in the
 * client's buffers before it is read: most clients then report a broken
 * pipe or a reset instead of the status. So the server half-closes, reads
 * and throws away what the client still sends, and closes once the client
 * has closed its side or a budget of time or bytes runs out.
 */
import type { Socket } from 'node:net'

/**
 * How long a connection may linger. Long enough for a client on a slow link
 * to finish sending and see the answer; a peer that never stops sending
 * holds the socket no longer than this.
 */
export const LINGER_MS = 5_000

/**
 * How many more bytes are read and dropped. Clients that write the whole
 * body before they read (Python's http.client, many scripts) get their
 * answer for bodies up to this much past the point the server stopped;
 * beyond it, the upload costs the server more than the answer is worth.
 * Nothing is kept: each chunk is counted and let go.
 */
export const LINGER_BYTES = 8 * 1024 * 1024

/**
 * Makes the close that follows the answer on `socket` a lingering one. The
 * answer must carry `Connection: close`: Node then ends the connection with
 * `socket.destroySoon()`, which destroys it as soon as the answer is flushed;
 * that step is taken over here.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => linger(socket)
}

function linger(socket: Socket): void {
  const timer = setTimeout(() => socket.destroy(), LINGER_MS)
  timer.unref()
  socket.once('close', () => clearTimeout(timer))
  // Full close only once the answer has left: the client may close its side
  // before the last bytes of the answer are flushed.
  let closing = false
  const close = () => {
    if (closing) return
    closing = true
    if (socket.writableFinished) socket.destroy()
    else socket.once('finish', () => socket.destroy())
  }
  // Nothing after the answer is for the HTTP parser: a request pipelined
  // behind the body must not be processed (RFC 9112 §9.6). The bytes are
  // only counted.
  for (const listener of socket.listeners('data')) socket.removeListener('data', listener as (chunk: Buffer) => void)
  let left = LINGER_BYTES
  socket.on('data', (chunk: Buffer) => {
    left -= chunk.length
    if (left < 0) close()
  })
  // Half-close: the answer and a FIN go out, the read side stays open.
  socket.end()
  if (socket.readableEnded) close()
  else socket.once('end', close)
  socket.resume()
}
