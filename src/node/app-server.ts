/**
 * What `startSvcServer` (Node, ./server.ts) and `startWebServer` (Bun and
 * Deno, src/serve/server.ts) do alike, around a listener that differs: the
 * options read once, the run store from `SVC_STORE_URL`, the task runtime's
 * lifecycle, the core handler with static files and the dashboard, and the
 * order of a graceful shutdown (docs/server.md "startSvcServer").
 */
import { loadTelemetry } from './telemetry.ts'
import { DEFAULT_BODY_LIMIT } from '../runtime/http/body.ts'
import type { ResponseClass } from '../runtime/http/types.ts'
import { checkTaskSecretStrength } from '../runtime/admin/secret-strength.ts'
import { loopbackExemption } from '../runtime/admin/loopback-exemption.ts'
import { handlerOf, type HandlerConfig, type SvcHandler } from '../runtime/handler.ts'
import { GlobalResponse } from '../runtime/app/global-response.ts'
import { compiledRouter } from '../runtime/app/router.ts'
import type { Logger } from '../types.ts'
import { type Background, createBackground } from './background.ts'
import { resolveHost } from './host.ts'
import { DEFAULT_CLOSE_CODE, type HotSockets, type HotSocketsOptions } from './hot-sockets.ts'
import { noTaskLifecycle } from './no-tasks.ts'
import {
  checkServerOptions,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type RunningServer,
  type SvcServerOptions,
} from './options.ts'
import { createReloadableHandler, type ReloadableHandler } from './reload.ts'
import { drainOnSignals } from './signals.ts'
import { jsonResponse } from './socket-response.ts'
import { createStaticHandler } from './static.ts'
import type { ServerParts } from './server-parts.ts'

/** The HTTP side of a server's shutdown, which each listener does its own way. */
export interface HttpShutdown {
  /** Stops taking connections; resolves `true` once no request is in flight, or `false` at `deadline` (epoch ms). */
  stop(deadline: number): Promise<boolean>
  /** What is still in flight, for the warning when the deadline passes first: "3 request(s)". */
  inflight(): string
  /** Ends what is left of the HTTP side once all else has settled; `idle` is what `stop` resolved with. */
  end(deadline: number, idle: boolean): Promise<void>
}

/** What the shutdown and closeWebSockets ask of a WebSocket layer. */
type ClosingSockets = Pick<HotSockets<never>, 'closeAll' | 'closeWebSockets' | 'waitClosed' | 'terminateAll'> & {
  dispose?(): Promise<void>
}

export interface AppServer {
  readonly logger: Logger
  /** The interface to bind. */
  readonly hostname: string
  /** The port to bind. */
  readonly port: number
  /** Largest request body, in bytes. */
  readonly bodyLimit: number
  /** Work requests keep alive past their response, which `close()` waits for. */
  readonly background: Background
  /** The core handler, swapped by `reload`. */
  readonly app: ReloadableHandler
  /** What the server's WebSocket layer is given, its limits included. */
  readonly websocket: HotSocketsOptions
  /** True once `close()` has begun. */
  readonly closing: boolean
  /** The 500 a request gets when the core handler throws, once the error is logged. */
  failed(error: unknown): Response
  /**
   * Runs `listen`, then starts the task runtime. When `listen` fails,
   * nothing listens: what the server opened (the runtime, a store from
   * `SVC_STORE_URL`) is closed before the error is thrown on.
   */
  listening<T>(listen: () => Promise<T>): Promise<T>
  /**
   * The server its caller gets, bound to `port` at `url`. Its `close()` is
   * idempotent, and SIGTERM and SIGINT call it unless `installSignalHandlers`
   * is false. It stops the scheduler, stops taking connections, closes the
   * WebSockets with 1001, and waits for requests, sockets and task attempts
   * together, up to `shutdownTimeoutMs`; then forces what is left, and
   * closes the runtime.
   */
  running(parts: { port: number; url: string; http: HttpShutdown; websockets: ClosingSockets }): RunningServer
}

export interface AppServerOptions {
  /** The name of the API for messages: `startSvcServer()`. */
  where: string
  /** The `Response` class the core handler answers with. */
  responseClass?: ResponseClass
  /** The parts of svc the server carries: every one (`SERVER_PARTS`), or those a built app uses. */
  parts: ServerParts
}

export async function openAppServer(options: SvcServerOptions, { where, responseClass, parts }: AppServerOptions): Promise<AppServer> {
  checkServerOptions(options, where)
  const env = options.env ?? process.env
  const logger = options.logger ?? console
  const dev = options.dev ?? env.NODE_ENV === 'development'
  const tasks = parts.tasks
  // The edge of the server: every option is checked here, once, before the
  // store opens, so that a refused start leaves nothing open; what is built
  // from them below reads them checked.
  checkTaskSecretStrength(env, dev, where, logger)
  // The process outlives each response; close() drains task attempts itself.
  const taskOptions = tasks?.surface.resolve({ ...options, holdRuns: false, dashboardPage: tasks.dashboard }, where)
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS
  // A trigger's body is its input: requests may be as large as a run's payloads.
  const maxPayloadBytes = options.runtime?.maxPayloadBytes ?? options.maxPayloadBytes ?? 0
  const bodyLimit = options.bodyLimit ?? Math.max(DEFAULT_BODY_LIMIT, maxPayloadBytes)

  // The store option, else SVC_STORE_URL, else memory; one opened here closes with the server.
  const opened = !tasks || options.runtime || options.store ? undefined : await tasks.storeFromEnv(env, { defaultStore: 'memory' })
  const telemetry = options.telemetry === undefined ? await loadTelemetry(env) : options.telemetry || undefined
  const background = createBackground(logger)
  const lifecycleOptions = {
    runtime: options.runtime,
    create: {
      routes: options.apiRoutes,
      events: options.events,
      store: options.store ?? opened?.store,
      closeStore: opened?.close,
      maxPayloadBytes: options.maxPayloadBytes,
      maxConcurrentRuns: options.maxConcurrentRuns,
      telemetry,
      // A development server prints what runs log, with their task and run id.
      printRunLogs: dev,
    },
    env,
    logger,
    waitUntil: background.waitUntil,
    drainTimeoutMs: shutdownTimeoutMs,
  }
  const lifecycle = tasks ? tasks.lifecycle(lifecycleOptions) : noTaskLifecycle(options, where)
  const config: HandlerConfig = {
    where,
    routes: options.apiRoutes,
    pages: options.pages,
    env,
    logger,
    R: responseClass ?? GlobalResponse,
    dev,
    bodyLimit,
    givenBodyLimit: bodyLimit,
    globalHooks: options.globalHooks,
    fallback: options.staticDirs ? createStaticHandler(options.staticDirs, logger) : undefined,
    telemetry,
    cache: options.cache ?? {},
    tasks: taskOptions,
  }
  const handlerParts = {
    streams: tasks?.streams,
    loopback: loopbackExemption,
    tasks: tasks?.surface,
    pages: parts.pages,
    // A server routes many requests over the life of one app: it compiles its routes once.
    router: compiledRouter,
  }
  let closing: Promise<void> | undefined
  const app = createReloadableHandler(
    { apiRoutes: options.apiRoutes, pages: options.pages, events: options.events },
    {
      lifecycle,
      closing: () => closing !== undefined,
      build: ({ apiRoutes, pages }, runtime) =>
        handlerOf({ ...config, routes: apiRoutes, pages, tasks: taskOptions && { ...taskOptions, runtime } }, handlerParts),
    },
  )

  return {
    logger,
    hostname: resolveHost(options.host, env),
    port: options.port ?? DEFAULT_PORT,
    bodyLimit,
    background,
    app,
    websocket: {
      handler: () => app.current,
      logger,
      draining: () => closing !== undefined,
      maxMessageBytes: options.websocket?.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      maxBufferedBytes: options.websocket?.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    },
    get closing() {
      return closing !== undefined
    },
    failed(error) {
      logger.error('[svc] could not answer a request:', error)
      return jsonResponse(500, 'INTERNAL_ERROR', 'Internal Server Error')
    },
    async listening(listen) {
      let listener: Awaited<ReturnType<typeof listen>>
      try {
        listener = await listen()
      } catch (error) {
        await lifecycle.close()
        throw error
      }
      await lifecycle.start()
      return listener
    },
    running({ port, url, http, websockets }) {
      const close = (): Promise<void> => {
        closing ??= (async () => {
          const deadline = Date.now() + shutdownTimeoutMs
          removeSignals?.()
          lifecycle.stopScheduler()
          const httpIdle = http.stop(deadline)
          websockets.closeAll(DEFAULT_CLOSE_CODE, 'Server shutting down')
          const [httpDone, wsDone] = await Promise.all([
            httpIdle,
            websockets.waitClosed(deadline),
            lifecycle.drain(Math.max(0, deadline - Date.now())),
          ])
          if (!httpDone) {
            logger.warn(`[svc] shutdown: ${http.inflight()} still in flight after ${shutdownTimeoutMs} ms; closing their connections`)
          }
          if (!wsDone) websockets.terminateAll()
          await websockets.dispose?.()
          await background.settle(deadline)
          await http.end(deadline, httpDone)
          await lifecycle.close()
        })()
        return closing
      }
      const installSignalHandlers = options.installSignalHandlers ?? env.NODE_ENV !== 'test'
      const removeSignals = installSignalHandlers ? drainOnSignals(close, logger, shutdownTimeoutMs) : undefined
      return {
        port,
        url,
        // A server started from code always has one; only a built server of routes has none.
        get runtime() {
          return lifecycle.runtime!
        },
        get handler() {
          return app.current as SvcHandler
        },
        close,
        closeWebSockets: (code, reason, filter) => websockets.closeWebSockets(code, reason, filter),
      }
    },
  }
}

/** `http://<address>:<port>`, an IPv6 address in brackets (RFC 3986 §3.2.2). */
export function httpUrl(address: string, port: number): string {
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`
}
