/**
 * The Deno host of `startWebServer`: `Deno.serve`, WebSockets through crossws.
 *
 * The server calls `Deno.serve` itself rather than through srvx's adapter,
 * which defines three properties on every request (`runtime`, `ip`,
 * `waitUntil`): on Deno, more CPU than the rest of a small JSON answer's
 * path in svc. What svc needs of them, the peer address and the
 * connection info for an upgrade, comes from the request info instead.
 */
import denoAdapter from 'crossws/adapters/deno'
import type { RequestInfo } from '../types.ts'
import type { WebHost } from './host.ts'

/** What `Deno.serve` tells the handler about a request's connection. */
interface ServeHandlerInfo {
  readonly remoteAddr?: { readonly hostname?: string }
}

/** What svc uses of a `Deno.serve` server. */
interface DenoServer {
  readonly addr?: { readonly hostname: string; readonly port: number }
  shutdown(): Promise<void>
}

declare const Deno: {
  serve(
    options: { port: number; hostname: string; onListen: (addr: { hostname: string; port: number }) => void },
    handler: (request: Request, info: ServeHandlerInfo) => Response | Promise<Response>,
  ): DenoServer
}

/** A request's info on Deno: the peer address from `Deno.serve`'s own info, which the upgrade also takes. */
class DenoRequestInfo implements RequestInfo {
  readonly serveInfo: ServeHandlerInfo
  readonly waitUntil: RequestInfo['waitUntil']
  constructor(serveInfo: ServeHandlerInfo, waitUntil: RequestInfo['waitUntil']) {
    this.serveInfo = serveInfo
    this.waitUntil = waitUntil
  }
  get remoteAddress(): string | undefined {
    return this.serveInfo.remoteAddr?.hostname
  }
}

export const denoHost: WebHost = {
  name: 'Deno',
  target: 'deno',
  present: 'Deno' in globalThis,
  // Deno.upgradeWebSocket takes no message limit: it refuses only a frame
  // over 64 MiB, and buffers a fragmented message whole, whatever its size.
  limitsMessages: false,
  async listen(options) {
    const { hooks, fetch, waitUntil } = options
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
    let listening!: () => void
    const listened = new Promise<void>((resolve) => (listening = resolve))
    // Deno.serve throws when it cannot bind (AddrInUse, code EADDRINUSE).
    const deno = Deno.serve(
      { port: options.port, hostname: options.hostname, onListen: () => listening() },
      // Only Bun takes a socket without a response: on Deno the upgrade's answer is a response.
      (request, info) => fetch(request, new DenoRequestInfo(info, waitUntil)) as Response | Promise<Response>,
    )
    await listened
    return {
      address: deno.addr?.hostname ?? options.hostname,
      port: deno.addr?.port ?? options.port,
      upgrade: (request, info) => ws.handleUpgrade(request, (info as DenoRequestInfo).serveInfo as never),
      // Waits for the requests in flight (Deno.HttpServer#shutdown).
      stop: () => deno.shutdown(),
      // Deno cannot cut the connections its server holds: they end with the process.
      abort: async () => {},
    }
  },
  // Deno's server-side WebSocket has no way to drop a connection without the closing handshake.
  drop: (peer, code, reason) => peer.close(code, reason),
}
