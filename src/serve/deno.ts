/** The Deno host of `startWebServer`: `Deno.serve` through srvx, WebSockets through crossws. */
import denoAdapter from 'crossws/adapters/deno'
import type { ServerHandler } from 'srvx'
import { serve } from 'srvx/deno'
import { LISTEN_OPTIONS } from '../node/listen.ts'
import type { WebHost } from './host.ts'

export const denoHost: WebHost = {
  name: 'Deno',
  target: 'deno',
  present: 'Deno' in globalThis,
  // Deno.upgradeWebSocket takes no message limit: it refuses only a frame
  // over 64 MiB, and buffers a fragmented message whole, whatever its size.
  limitsMessages: false,
  async listen(options) {
    const { hooks } = options
    const ws = denoAdapter({
      idleTimeout: options.idleTimeoutSeconds,
      hooks: {
        ...hooks,
        // crossws's Deno adapter reports a close without its code and
        // reason; the socket's own close event has them. A connection that
        // ended without a closing handshake has code 0 there, which is 1006
        // (abnormal closure, RFC 6455 §7.1.5).
        open(peer) {
          peer.websocket.addEventListener?.('close', (event) => hooks.close?.(peer, { code: event.code || 1006, reason: event.reason }))
          return hooks.open?.(peer)
        },
        close: undefined,
        // Deno fires an error event before such a close (a client that
        // reset the connection, say): a fact of the network, which the
        // close listeners learn as 1006, not an error of the app; the Node
        // server does not log it either.
        error: undefined,
      },
    })
    const server = serve({
      ...LISTEN_OPTIONS,
      port: options.port,
      hostname: options.hostname,
      fetch: options.fetch as ServerHandler,
    })
    await server.serve()
    const deno = server.deno!.server!
    return {
      address: deno.addr?.hostname ?? options.hostname,
      port: deno.addr?.port ?? options.port,
      upgrade: (request) => ws.handleUpgrade(request, request.runtime!.deno!.info),
      // Waits for the requests in flight (Deno.HttpServer#shutdown).
      stop: () => deno.shutdown(),
      // Deno cannot cut the connections its server holds: they end with the process.
      abort: async () => {},
    }
  },
  // Deno's server-side WebSocket has no way to drop a connection without the closing handshake.
  drop: (peer, code, reason) => peer.close(code, reason),
}
