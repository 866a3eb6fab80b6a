/**
 * `startWebServer()`: `startSvcServer` for Bun and Deno. API routes, server
 * and hybrid pages, the task admin surface and scheduler, the dashboard,
 * WebSocket hot routes, static files and graceful shutdown on one port, on
 * `Bun.serve` or `Deno.serve` through srvx, with the WebSockets through
 * crossws. The runtime's own parts come from a `WebHost` (./bun.ts,
 * ./deno.ts); the task runtime's lifecycle, the store from `SVC_STORE_URL`,
 * static files and signals are the Node server's own modules, which use
 * only what Bun and Deno implement.
 */
import type { ServerRequest } from 'srvx'
import { limitRequestBody } from 'srvx/body-limit'
import { DEFAULT_BODY_LIMIT } from '../runtime/admin/body.ts'
import { isWebSocketUpgrade } from '../runtime/app/upgrade.ts'
import { DASHBOARD_PAGE } from '../runtime/dashboard/page.ts'
import { describe } from '../runtime/describe.ts'
import { createSvcHandler, type SvcHandler } from '../runtime/handler.ts'
import type { RequestInfo, TaskRuntime } from '../types.ts'
import { createBackground } from '../node/background.ts'
import { resolveHost } from '../node/host.ts'
import { createRuntimeLifecycle } from '../node/lifecycle.ts'
import { LIVENESS_INTERVAL_MS } from '../node/liveness.ts'
import {
  checkServerOptions,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type SvcServerOptions,
} from '../node/options.ts'
import { within } from '../node/shutdown.ts'
import { drainOnSignals } from '../node/signals.ts'
import { jsonResponse } from '../node/socket-response.ts'
import { createStaticHandler } from '../node/static.ts'
import { storeFromEnv } from '../node/store-url.ts'
import { checkCloseCode, DEFAULT_CLOSE_CODE } from '../node/websocket.ts'
import type { Listener, WebHost } from './host.ts'
import { createWebSocketLayer } from './websocket.ts'

/** The options of `startSvcServer`, all of which apply on Bun and Deno. */
export type WebServerOptions = SvcServerOptions

export interface WebServer {
  /** The port actually bound. */
  readonly port: number
  /** `http://<address>:<port>`, the address as the runtime bound it. */
  readonly url: string
  /** The task runtime behind `/__tasks` and the scheduler. */
  readonly runtime: TaskRuntime
  /** The core fetch handler the server mounts. */
  readonly handler: SvcHandler
  /**
   * Stops accepting connections; answers requests that still arrive with
   * 503 `Connection: close`; closes WebSockets with 1001; stops the
   * scheduler; waits for in-flight requests and task attempts up to
   * `shutdownTimeoutMs`, then forces. Idempotent.
   */
  close(): Promise<void>
  /**
   * Starts the closing handshake on every open WebSocket, or only on those
   * whose route path `filter` accepts; the server keeps running.
   * @param code @default 1001
   */
  closeWebSockets(code?: number, reason?: string, filter?: (route: string) => boolean): void
}

const DRAINING_ERROR = 'The server is shutting down; retry on another connection'

/** What only the host knows about a request, read lazily: most requests never ask for the peer address. */
class WebRequestInfo implements RequestInfo {
  readonly #request: ServerRequest
  readonly waitUntil: RequestInfo['waitUntil']
  constructor(request: ServerRequest, waitUntil: RequestInfo['waitUntil']) {
    this.#request = request
    this.waitUntil = waitUntil
  }
  get remoteAddress(): string | undefined {
    return this.#request.ip
  }
}

export async function startWebServer(options: WebServerOptions, host: WebHost): Promise<WebServer> {
  const where = `startWebServer() on ${host.name}`
  if (!host.present) {
    throw new Error(
      `${where}: this process does not run on ${host.name}; build for the runtime it runs on (svc build --target node, for Node)`,
    )
  }
  checkServerOptions(options, where)
  const env = options.env ?? process.env
  const logger = options.logger ?? console
  const hostname = resolveHost(options.host, env)
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS
  // A trigger's body is its input: requests may be as large as a run's payloads.
  const maxPayloadBytes = options.runtime?.maxPayloadBytes ?? options.maxPayloadBytes ?? 0
  const bodyLimit = options.bodyLimit ?? Math.max(DEFAULT_BODY_LIMIT, maxPayloadBytes)
  const maxMessageBytes = options.websocket?.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES

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
  const handler = createSvcHandler({
    routes: options.apiRoutes,
    pages: options.pages,
    cache: options.cache ?? {},
    globalHooks: options.globalHooks,
    runtime: lifecycle.runtime,
    env,
    bodyLimit,
    dev: options.dev,
    dashboard: options.dashboard,
    dashboardPage: DASHBOARD_PAGE,
    runEvents: options.runEvents,
    logger,
    fallback: options.staticDirs ? createStaticHandler(options.staticDirs, logger) : undefined,
    // The process outlives each response; close() drains task attempts itself.
    holdRuns: false,
  })

  let draining = false
  const failed = (error: unknown) => {
    logger.error('[svc] could not answer a request:', error)
    return jsonResponse(500, 'INTERNAL_ERROR', 'Internal Server Error')
  }
  const websockets = createWebSocketLayer({
    host,
    handler: () => handler,
    logger,
    draining: () => draining,
    maxMessageBytes,
    maxBufferedBytes: options.websocket?.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
  })
  let listener: Listener
  try {
    listener = await host.listen({
      port: options.port ?? DEFAULT_PORT,
      hostname,
      maxMessageBytes,
      idleTimeoutSeconds: LIVENESS_INTERVAL_MS / 1000,
      hooks: websockets.hooks,
      fetch(request) {
        // RFC 9112 §9.6: "close" makes the client open a new connection, which reaches a live instance.
        if (draining) return jsonResponse(503, 'SHUTTING_DOWN', DRAINING_ERROR, { connection: 'close' })
        const info = new WebRequestInfo(request, background.waitUntil)
        if (isWebSocketUpgrade(request)) return websockets.upgrade(request, info, listener)
        let answer: Response | Promise<Response>
        try {
          // srvx's limit, as on Node: a body read past bodyLimit fails with
          // the error the core answers as 413 PAYLOAD_TOO_LARGE.
          answer = handler.handle(request.body ? limitRequestBody(request, bodyLimit) : request, info)
        } catch (error) {
          return failed(error)
        }
        return answer instanceof Promise ? answer.catch(failed) : answer
      },
    })
  } catch (error) {
    // Nothing listens: what the server opened (the runtime, a store from SVC_STORE_URL) closes.
    await lifecycle.close()
    throw error
  }
  await lifecycle.start()

  const closeWebSockets = (code: number = DEFAULT_CLOSE_CODE, reason?: string, filter?: (route: string) => boolean) => {
    checkCloseCode(code, reason)
    if (filter !== undefined && typeof filter !== 'function') {
      throw new TypeError(`closeWebSockets(code, reason, filter): filter must be a function of the route path (got ${describe(filter)})`)
    }
    websockets.closeAll(code, reason, filter)
  }

  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      draining = true
      const deadline = Date.now() + shutdownTimeoutMs
      removeSignals?.()
      lifecycle.stopScheduler()
      const stopped = listener.stop()
      websockets.closeAll(DEFAULT_CLOSE_CODE, 'Server shutting down')
      const [httpDone, wsDone] = await Promise.all([
        within(stopped, deadline),
        websockets.waitClosed(deadline),
        lifecycle.drain(Math.max(0, deadline - Date.now())),
      ])
      if (!wsDone) websockets.dropAll()
      if (!httpDone) {
        logger.warn(`[svc] shutdown: requests still in flight after ${shutdownTimeoutMs} ms; closing their connections`)
        await listener.abort()
      }
      await background.settle(deadline)
      await lifecycle.close()
    })()
    return closing
  }

  const installSignalHandlers = options.installSignalHandlers ?? env.NODE_ENV !== 'test'
  const removeSignals = installSignalHandlers ? drainOnSignals(close, logger, shutdownTimeoutMs) : undefined

  return {
    port: listener.port,
    url: `http://${listener.address.includes(':') ? `[${listener.address}]` : listener.address}:${listener.port}`,
    get runtime() {
      return lifecycle.runtime
    },
    handler,
    close,
    closeWebSockets,
  }
}
