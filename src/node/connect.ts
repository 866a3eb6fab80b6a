/**
 * CONNECT (RFC 9110 §9.3.6) asks for a tunnel, which only a proxy opens.
 * Node hands it to a `connect` listener and, without one, drops the socket
 * with no answer; this one answers 405 and closes.
 */
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from '../types.ts'
import { jsonResponse, writeResponse } from './socket-response.ts'

export function refuseConnect(server: Server, logger: Logger): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', (error) => logger.warn(`[svc] CONNECT socket error from ${req.socket.remoteAddress}:`, error))
    // RFC 9110 §10.2.1: an empty Allow says the target allows no method here.
    const refusal = jsonResponse(
      405,
      'METHOD_NOT_ALLOWED',
      'CONNECT is not supported: this server is not a proxy; send requests to it directly',
      { allow: '' },
    )
    writeResponse(socket, refusal).catch(() => socket.destroy())
  })
}
