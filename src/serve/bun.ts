/** The Bun host of `startWebServer`: `Bun.serve` through srvx, WebSockets through crossws. */
import bunAdapter from 'crossws/adapters/bun'
import type { ServerHandler } from 'srvx'
import { serve } from 'srvx/bun'
import { LISTEN_OPTIONS } from '../node/listen.ts'
import type { WebHost } from './host.ts'

/** Bun's reason for a connection it closed over a message past `maxPayloadLength`; the client gets 1009. */
const TOO_BIG_REASON = 'Received too big message'

export const bunHost: WebHost = {
  name: 'Bun',
  target: 'bun',
  present: 'Bun' in globalThis,
  limitsMessages: true,
  async listen(options) {
    const { hooks } = options
    const ws = bunAdapter({
      idleTimeout: options.idleTimeoutSeconds,
      hooks: {
        ...hooks,
        // Bun reports its own close over a too-big message as 1006; the client got 1009, and so do the route's listeners.
        close: (peer, details) => hooks.close?.(peer, details.reason === TOO_BIG_REASON ? { code: 1009, reason: details.reason } : details),
      },
    })
    const server = serve({
      ...LISTEN_OPTIONS,
      port: options.port,
      hostname: options.hostname,
      fetch: options.fetch as ServerHandler,
      // Bun refuses a message past maxPayloadLength as it arrives and closes with 1009 (RFC 6455 §7.4.1).
      bun: { websocket: { ...ws.websocket, maxPayloadLength: options.maxMessageBytes } },
    })
    await server.serve()
    const bun = server.bun!.server!
    const bound = (bun as { address?: { address: string } }).address
    return {
      address: bound?.address ?? bun.hostname ?? options.hostname,
      port: bun.port ?? options.port,
      upgrade: (request) => ws.handleUpgrade(request, request.runtime!.bun!.server as never),
      async stop() {
        const stopped = bun.stop(false)
        // Bun's graceful stop also waits for idle keep-alive connections,
        // which only their clients end: once no response is in flight, they
        // are closed, as Node's server closes its idle connections.
        while ((bun.pendingRequests ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, 10))
        await bun.stop(true)
        await stopped
      },
      abort: () => bun.stop(true),
    }
  },
  drop: (peer) => peer.terminate(),
}
