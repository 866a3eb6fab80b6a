/**
 * `startSvcServer()` (docs/server.md "startSvcServer"): API routes, server and
 * hybrid pages with the ISR cache, the task admin surface and scheduler,
 * WebSocket hot routes, static files and graceful shutdown on one port.
 *
 * A composition on srvx's `serve()`: srvx owns the listener, the requests and
 * the writing of responses; each part here adds one thing to it (the drain,
 * the lingering close, CONNECT, upgrades, the task runtime, signals, reload).
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import { Server as NetServer } from 'node:net'
import type { ServerRequest } from 'srvx'
import { FastResponse, serve } from 'srvx/node'
import { DEFAULT_BODY_LIMIT } from '../runtime/admin/body.ts'
import type { ResponseClass } from '../runtime/app/types.ts'
import { DASHBOARD_PAGE } from '../runtime/dashboard/page.ts'
import { createSvcHandler } from '../runtime/handler.ts'
import { describe } from '../runtime/describe.ts'
import { createBackground } from './background.ts'
import { refuseConnect } from './connect.ts'
import { resolveHost } from './host.ts'
import { refuseOtherRuntimes } from './runtime-guard.ts'
import { createRuntimeLifecycle } from './lifecycle.ts'
import {
  checkServerOptions,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type SvcServer,
  type SvcServerOptions,
} from './options.ts'
import { createReloadableHandler } from './reload.ts'
import { NodeRequestInfo } from './request-info.ts'
import { SvcServerResponse } from './response.ts'
import { createDrain, within } from './shutdown.ts'
import { drainOnSignals } from './signals.ts'
import { jsonResponse } from './socket-response.ts'
import { createStaticHandler } from './static.ts'
import { storeFromEnv } from './store-url.ts'
import { closeIfBodyUnread } from './unread-body.ts'
import { checkCloseCode, createWebSocketLayer, DEFAULT_CLOSE_CODE } from './websocket.ts'

export async function startSvcServer(options: SvcServerOptions): Promise<SvcServer> {
  refuseOtherRuntimes('startSvcServer()')
  checkServerOptions(options, 'startSvcServer()')
  const env = options.env ?? process.env
  const logger = options.logger ?? console
  const host = resolveHost(options.host, env)
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS
  // A trigger's body is its input: requests may be as large as a run's payloads.
  const maxPayloadBytes = options.runtime?.maxPayloadBytes ?? options.maxPayloadBytes ?? 0
  const bodyLimit = options.bodyLimit ?? Math.max(DEFAULT_BODY_LIMIT, maxPayloadBytes)

  // The store option, else SVC_STORE_URL, else memory; one opened here closes with the server.
  const opened = options.runtime || options.store ? undefined : await storeFromEnv(env, { defaultStore: 'memory' })
  const background = createBackground(logger)
  const lifecycle = createRuntimeLifecycle({
    runtime: options.runtime,
    create: {
      routes: options.apiRoutes,
      store: options.store ?? opened?.store,
      closeStore: opened?.close,
      maxPayloadBytes: options.maxPayloadBytes,
    },
    env,
    logger,
    waitUntil: background.waitUntil,
    drainTimeoutMs: shutdownTimeoutMs,
  })
  const staticFiles = options.staticDirs ? createStaticHandler(options.staticDirs, logger) : undefined
  let closing: Promise<void> | undefined
  const app = createReloadableHandler(
    { apiRoutes: options.apiRoutes, pages: options.pages },
    {
      lifecycle,
      closing: () => closing !== undefined,
      build: ({ apiRoutes, pages }, runtime) =>
        createSvcHandler({
          routes: apiRoutes,
          pages,
          cache: options.cache ?? {},
          globalHooks: options.globalHooks,
          runtime,
          env,
          bodyLimit,
          dev: options.dev,
          dashboard: options.dashboard,
          dashboardPage: DASHBOARD_PAGE,
          runEvents: options.runEvents,
          logger,
          fallback: staticFiles,
          // The process outlives each response; close() drains task attempts itself.
          holdRuns: false,
          // FastResponse is written by srvx without building a Web Response first.
          responseClass: FastResponse as unknown as ResponseClass,
        }),
    },
  )

  const drain = createDrain()
  const failed = (error: unknown) => {
    logger.error('[svc] could not answer a request:', error)
    return jsonResponse(500, 'INTERNAL_ERROR', 'Internal Server Error')
  }
  const server = serve({
    port: options.port ?? DEFAULT_PORT,
    hostname: host,
    // Listening waits for the upgrade and CONNECT listeners below.
    manual: true,
    silent: true,
    // svc drains itself: 503 on kept-alive connections, WebSockets, task attempts.
    gracefulShutdown: false,
    maxRequestBodySize: bodyLimit,
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

  const websockets = createWebSocketLayer({
    handler: () => app.current,
    logger,
    draining: () => drain.draining,
    maxMessageBytes: options.websocket?.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    maxBufferedBytes: options.websocket?.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
  })
  websockets.attach(httpServer)
  refuseConnect(httpServer, logger)

  await server.serve()
  const address = httpServer.address()
  const port = typeof address === 'object' && address ? address.port : (options.port ?? DEFAULT_PORT)
  await lifecycle.start()

  const closeWebSockets = (code: number = DEFAULT_CLOSE_CODE, reason?: string, filter?: (route: string) => boolean) => {
    checkCloseCode(code, reason)
    if (filter !== undefined && typeof filter !== 'function') {
      throw new TypeError(`closeWebSockets(code, reason, filter): filter must be a function of the route path (got ${describe(filter)})`)
    }
    websockets.closeAll(code, reason, filter)
  }

  const close = (): Promise<void> => {
    closing ??= (async () => {
      drain.begin()
      const deadline = Date.now() + shutdownTimeoutMs
      removeSignals?.()
      lifecycle.stopScheduler()
      // Stop listening but keep idle keep-alive connections: a request already
      // on its way over one gets a 503 it can retry instead of a reset.
      // http.Server#close (and so srvx's close) would also drop them
      // (closeIdleConnections); net.Server#close leaves them be.
      const listenerClosed = new Promise<void>((resolve) => httpServer.once('close', () => resolve()))
      NetServer.prototype.close.call(httpServer)
      websockets.closeAll(DEFAULT_CLOSE_CODE, 'Server shutting down')
      const [httpDone, wsDone] = await Promise.all([
        drain.idle(deadline),
        websockets.waitClosed(deadline),
        lifecycle.drain(Math.max(0, deadline - Date.now())),
      ])
      if (!httpDone)
        logger.warn(`[svc] shutdown: ${drain.inflight} request(s) still in flight after ${shutdownTimeoutMs} ms; closing their connections`)
      if (!wsDone) websockets.terminateAll()
      await websockets.dispose()
      await background.settle(deadline)
      // Closes the idle keep-alive connections (and http.Server's sweep
      // timer); connections still writing a response end on their own, or
      // are cut at the deadline.
      httpServer.close()
      if (!(await within(listenerClosed, deadline))) await server.close(true)
      await listenerClosed
      await lifecycle.close()
    })()
    return closing
  }

  const installSignalHandlers = options.installSignalHandlers ?? env.NODE_ENV !== 'test'
  const removeSignals = installSignalHandlers ? drainOnSignals(close, logger, shutdownTimeoutMs) : undefined

  return {
    server: httpServer,
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    get runtime() {
      return lifecycle.runtime
    },
    get handler() {
      return app.current
    },
    close,
    closeWebSockets,
    reload: app.reload,
  }
}
