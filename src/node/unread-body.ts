/**
 * Node discards a request body nobody touched, but not one a reader began
 * and left (a handler that answered early, or the body limit, which pauses
 * the stream): those bytes stay in the connection and the next request on
 * it would wait behind them forever. Such an answer ends the connection
 * instead (RFC 9112 §9.6), with a lingering close so a client still sending
 * reads the answer rather than a reset (linger.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { lingerOnClose } from './linger.ts'

/** Marks the connection for a lingering close if the request body was begun and left; call once the answer is known, whether it came or the handler threw. */
export function closeIfBodyUnread(req: IncomingMessage, res: ServerResponse): void {
  if (!req.complete && (req.readableFlowing !== null || req.readableDidRead) && !res.headersSent) {
    // Merged into the head srvx writes next.
    res.setHeader('connection', 'close')
    if (res.socket) lingerOnClose(res.socket)
  }
}
