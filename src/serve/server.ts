/**
 * `startWebServer()`: `startSvcServer` for Bun and Deno. API routes, server
 * and hybrid pages, the task admin surface and scheduler, the dashboard,
 * WebSocket hot routes, static files and graceful shutdown on one port, on
 * `Bun.serve` or `Deno.serve`, with the WebSockets through crossws. The
 * runtime's own parts come from a `WebHost` (./bun.ts, ./deno.ts); what the
 * Node server does alike comes from
 * src/node/app-server.ts, whose modules use only what Bun and Deno implement.
 */
import { limitRequestBody } from 'srvx/body-limit'
import { isWebSocketUpgrade } from '../runtime/app/upgrade.ts'
import { httpUrl, openAppServer } from '../node/app-server.ts'
import { listenFailure } from '../node/listen.ts'
import { LIVENESS_INTERVAL_MS } from '../node/liveness.ts'
import type { RunningServer, SvcServerOptions } from '../node/options.ts'
import { SERVER_PARTS, type ServerParts } from '../node/server-parts.ts'
import { within } from '../node/shutdown.ts'
import { jsonResponse } from '../node/socket-response.ts'
import type { Listener, WebHost } from './host.ts'
import { WebSocketLayer } from './websocket.ts'

/** The options of `startSvcServer`, all of which apply on Bun and Deno. */
export type WebServerOptions = SvcServerOptions

/** What `startWebServer` resolves with: what `startSvcServer` does, less the Node `http.Server` and `reload`. */
export type WebServer = RunningServer

const DRAINING_ERROR = 'The server is shutting down; retry on another connection'

const RESPONSE_PROTOTYPE: object = Response.prototype

/**
 * A response as the runtime can send it. One of another class, such as
 * srvx's Node `FastResponse` (which a bundle of srvx's Node build, its
 * static files among it, answers with), is copied into the runtime's own
 * `Response` through its public members; Deno refuses any other, as
 * srvx's own Bun and Deno servers knew.
 */
function nativeResponse(res: Response): Response {
  if (Object.getPrototypeOf(res) === RESPONSE_PROTOTYPE) return res
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers })
}

export function startWebServer(options: WebServerOptions, host: WebHost): Promise<WebServer> {
  return startWebServerWith(options, host, SERVER_PARTS)
}

/** `startWebServer` with only the `parts` of svc given: what a server `svc build` wrote starts with. */
export async function startWebServerWith(options: WebServerOptions, host: WebHost, parts: ServerParts): Promise<WebServer> {
  const where = `startWebServer() on ${host.name}`
  if (!host.present) {
    throw new Error(
      `${where}: this process does not run on ${host.name}; build for the runtime it runs on (svc build --target node, for Node)`,
    )
  }
  const shared = await openAppServer(options, { where, parts })
  const { app, background, bodyLimit, failed } = shared

  const websockets = new WebSocketLayer({ ...shared.websocket, host })
  // Only a hot route takes a WebSocket, and only over GET (RFC 6455 §4.1):
  // an app without one answers a handshake as any request (the admin
  // surface refuses one itself), without reading a header for it. A read
  // costs: Deno answers a request whose headers were read a microtask later.
  // The routes are fixed for the server's life (it has no reload).
  const hot = options.apiRoutes.some((route) => route?.module?.websocket !== undefined)
  // Assigned as soon as the host listens, before the task runtime starts: an upgrade may arrive meanwhile.
  let listener!: Listener
  const listening = shared.listening(async () => {
    listener = await host.listen({
      port: shared.port,
      hostname: shared.hostname,
      maxMessageBytes: shared.websocket.maxMessageBytes,
      idleTimeoutSeconds: LIVENESS_INTERVAL_MS / 1000,
      hooks: websockets.hooks,
      waitUntil: background.waitUntil,
      fetch(request, info) {
        // RFC 9112 §9.6: "close" makes the client open a new connection, which reaches a live instance.
        if (shared.closing) return jsonResponse(503, 'SHUTTING_DOWN', DRAINING_ERROR, { connection: 'close' })
        if (hot && request.method === 'GET' && isWebSocketUpgrade(request)) return websockets.upgrade(request, info, listener)
        let answer: Response | Promise<Response>
        try {
          // srvx's limit, as on Node: a body read past bodyLimit fails with
          // the error the core answers as 413 PAYLOAD_TOO_LARGE.
          answer = app.current.handle(request.body ? limitRequestBody(request, bodyLimit) : request, info)
        } catch (error) {
          return failed(error)
        }
        return answer instanceof Promise ? answer.then(nativeResponse, failed) : nativeResponse(answer)
      },
    })
  })
  await listening.catch((error: unknown) => {
    throw listenFailure(error, shared.port, shared.hostname)
  })

  return shared.running({
    port: listener.port,
    url: httpUrl(listener.address, listener.port),
    websockets,
    http: {
      stop: (deadline) => within(listener.stop(), deadline),
      // Neither runtime counts them.
      inflight: () => 'requests',
      async end(_deadline, idle) {
        if (!idle) await listener.abort()
      },
    },
  })
}
