/**
 * `startSvcServer()` (docs/server.md "startSvcServer"): API routes, server and
 * hybrid pages with the ISR cache, the task admin surface and scheduler,
 * WebSocket hot routes, static files and graceful shutdown on one port.
 *
 * A composition on srvx's `serve()`: srvx owns the listener, the requests and
 * the writing of responses; ./app-server.ts brings what Bun and Deno do
 * alike; each part here adds what only Node does (the counted drain, the
 * lingering close, CONNECT, upgrades on the raw socket, reload).
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import { Server as NetServer } from 'node:net'
import type { ServerRequest } from 'srvx'
import { FastResponse, serve } from 'srvx/node'
import type { ResponseClass } from '../runtime/http/types.ts'
import { httpUrl, openAppServer } from './app-server.ts'
import { refuseConnect } from './connect.ts'
import { LISTEN_OPTIONS, listenFailure } from './listen.ts'
import type { SvcServer, SvcServerOptions } from './options.ts'
import { NodeRequestInfo } from './request-info.ts'
import { SvcServerResponse } from './response.ts'
import { SERVER_PARTS, type ServerParts } from './server-parts.ts'
import { refuseOtherRuntimes } from './runtime-guard.ts'
import { createDrain, within } from './shutdown.ts'
import { closeIfBodyUnread } from './unread-body.ts'
import { createWebSocketLayer } from './websocket.ts'

export function startSvcServer(options: SvcServerOptions): Promise<SvcServer> {
  return startServer(options, SERVER_PARTS)
}

/** `startSvcServer` with only the `parts` of svc given: what a server `svc build` wrote starts with. */
export async function startServer(options: SvcServerOptions, parts: ServerParts): Promise<SvcServer> {
  refuseOtherRuntimes('startSvcServer()')
  const shared = await openAppServer(options, {
    where: 'startSvcServer()',
    // FastResponse is written by srvx without building a Web Response first.
    responseClass: FastResponse as unknown as ResponseClass,
    parts,
  })
  const { app, background, failed, hostname } = shared

  const drain = createDrain()
  const server = serve({
    ...LISTEN_OPTIONS,
    port: shared.port,
    hostname,
    maxRequestBodySize: shared.bodyLimit,
    // One function rather than srvx middleware and its `error` option,
    // each of which costs a closure per request.
    fetch: (request) => {
      const { req, res } = request.runtime!.node! as { req: IncomingMessage; res: ServerResponse }
      const draining = drain.admit(res)
      if (draining) return draining
      let answer: Response | Promise<Response>
      try {
        answer = app.current.handle(request, new NodeRequestInfo(request as ServerRequest, background.waitUntil))
      } catch (error) {
        closeIfBodyUnread(req, res)
        return failed(error)
      }
      if (!(answer instanceof Promise)) {
        closeIfBodyUnread(req, res)
        return answer
      }
      return answer.then(
        (response) => {
          closeIfBodyUnread(req, res)
          return response
        },
        (error) => {
          closeIfBodyUnread(req, res)
          return failed(error)
        },
      )
    },
    node: {
      ServerResponse: SvcServerResponse,
      // Only WebSocket upgrades are taken as upgrades: any other `Upgrade`
      // offer (`h2c` from `curl --http2`) is ignored, as RFC 9110 §7.8
      // allows, so its request and body reach the routes. Node before 24.9
      // ignores the option.
      shouldUpgradeCallback: (req) => req.headers.upgrade?.toLowerCase() === 'websocket',
    },
  })
  const httpServer = server.node!.server as HttpServer

  const websockets = createWebSocketLayer(shared.websocket)
  websockets.attach(httpServer)
  refuseConnect(httpServer, shared.logger)

  // Listening waits for the upgrade and CONNECT listeners above.
  await shared.listening(async () => {
    try {
      await server.serve()
    } catch (error) {
      throw listenFailure(error, shared.port, hostname)
    }
  })
  const address = httpServer.address()
  const port = typeof address === 'object' && address ? address.port : shared.port

  let listenerClosed: Promise<void>
  const running = shared.running({
    port,
    url: httpUrl(hostname, port),
    websockets,
    http: {
      stop(deadline) {
        drain.begin()
        // Stop listening but keep idle keep-alive connections: a request already
        // on its way over one gets a 503 it can retry instead of a reset.
        // http.Server#close (and so srvx's close) would also drop them
        // (closeIdleConnections); net.Server#close leaves them be.
        listenerClosed = new Promise<void>((resolve) => httpServer.once('close', () => resolve()))
        NetServer.prototype.close.call(httpServer)
        return drain.idle(deadline)
      },
      inflight: () => `${drain.inflight} request(s)`,
      async end(deadline) {
        // Closes the idle keep-alive connections (and http.Server's sweep
        // timer); connections still writing a response end on their own, or
        // are cut at the deadline.
        httpServer.close()
        if (!(await within(listenerClosed, deadline))) await server.close(true)
        await listenerClosed
      },
    },
  })
  return Object.assign(running, { server: httpServer, reload: app.reload })
}
