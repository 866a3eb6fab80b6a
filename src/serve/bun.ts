/**
 * The Bun host of `startWebServer`: `Bun.serve`, WebSockets through crossws.
 *
 * The server calls `Bun.serve` itself rather than through srvx's adapter,
 * which defines three properties on every request (`runtime`, `ip`,
 * `waitUntil`): a sixth of a small JSON answer's CPU on Bun. What svc
 * needs of them, the peer address and the server for an upgrade, comes
 * from the request info instead, read only when asked.
 */
import bunAdapter from 'crossws/adapters/bun'
import type { RequestInfo } from '../types.ts'
import type { WebHost } from './host.ts'

/** Bun's reason for a connection it closed over a message past `maxPayloadLength`; the client gets 1009. */
const TOO_BIG_REASON = 'Received too big message'

/** What svc uses of a `Bun.serve` server. */
interface BunServer {
  readonly port?: number
  readonly hostname?: string
  readonly address?: { address: string }
  readonly pendingRequests?: number
  requestIP(request: Request): { address: string } | null
  upgrade(request: Request, options?: unknown): boolean
  stop(closeActiveConnections?: boolean): Promise<void>
}

declare const Bun: {
  serve(options: {
    port: number
    hostname: string
    fetch: (request: Request, server: BunServer) => Response | undefined | Promise<Response | undefined>
    websocket: unknown
  }): BunServer
}

/** A request's info on Bun: the peer address from the server, when asked. */
class BunRequestInfo implements RequestInfo {
  readonly #request: Request
  readonly #server: BunServer
  readonly waitUntil: RequestInfo['waitUntil']
  constructor(request: Request, server: BunServer, waitUntil: RequestInfo['waitUntil']) {
    this.#request = request
    this.#server = server
    this.waitUntil = waitUntil
  }
  get remoteAddress(): string | undefined {
    return this.#server.requestIP(this.#request)?.address
  }
}

export const bunHost: WebHost = {
  name: 'Bun',
  target: 'bun',
  present: 'Bun' in globalThis,
  limitsMessages: true,
  async listen(options) {
    const { hooks, fetch, waitUntil } = options
    const ws = bunAdapter({
      idleTimeout: options.idleTimeoutSeconds,
      hooks: {
        ...hooks,
        // Bun reports its own close over a too-big message as 1006; the client got 1009, and so do the route's listeners.
        close: (peer, details) => hooks.close?.(peer, details.reason === TOO_BIG_REASON ? { code: 1009, reason: details.reason } : details),
      },
    })
    const bun = Bun.serve({
      port: options.port,
      hostname: options.hostname,
      fetch: (request, server) => fetch(request, new BunRequestInfo(request, server, waitUntil)),
      // Bun refuses a message past maxPayloadLength as it arrives and closes with 1009 (RFC 6455 §7.4.1).
      websocket: { ...ws.websocket, maxPayloadLength: options.maxMessageBytes },
    })
    return {
      address: bun.address?.address ?? bun.hostname ?? options.hostname,
      port: bun.port ?? options.port,
      upgrade: (request) => ws.handleUpgrade(request, bun as never),
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
