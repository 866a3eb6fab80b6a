/**
 * `startSvcServer()` (spec "Programmatic server"): API routes, server and
 * hybrid pages with the ISR cache, the task admin surface and scheduler,
 * WebSocket hot routes, static files and graceful shutdown on one port.
 * Node-only: srvx's Node adapter serves the core handler, crossws upgrades.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Server as NetServer } from 'node:net'
import type { Duplex } from 'node:stream'
import type { ServerRequest } from 'srvx'
import { FastResponse, NodeRequest } from 'srvx/node'
import { DEFAULT_BODY_LIMIT } from '../runtime/admin/body.ts'
import { RAW_TARGET } from '../runtime/app/path.ts'
import type { ResponseClass } from '../runtime/app/types.ts'
import { isEnabled } from '../runtime/env.ts'
import { createSvcHandler } from '../runtime/handler.ts'
import { createTaskRuntime, getActiveTaskRuntime, setActiveTaskRuntime, type TaskRuntimeInstance } from '../runtime/tasks/index.ts'
import { describe } from '../runtime/tasks/options.ts'
import { DISABLE_CRON_ENV } from '../runtime/tasks/scheduler.ts'
import type { RequestInfo, RuntimeApiRoute, RuntimePage, TaskRuntime } from '../types.ts'
import { resolveHost } from './host.ts'
import { lingerOnClose } from './linger.ts'
import {
  checkServerOptions,
  DEFAULT_MAX_BUFFERED_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type SvcServer,
  type SvcServerOptions,
} from './options.ts'
import { createStaticHandler } from './static.ts'
import { sendResponse } from './send.ts'
import { jsonResponse, writeResponse } from './socket-response.ts'
import { createWebSocketLayer, DEFAULT_CLOSE_CODE } from './websocket.ts'

const SIGNALS = ['SIGTERM', 'SIGINT'] as const

const DRAINING_BODY = JSON.stringify({ error: 'The server is shutting down; retry on another connection', code: 'SHUTTING_DOWN' })
// RFC 9112 §9.6: "close" makes the client open a new connection, which reaches a live instance.
const DRAINING_HEADERS = {
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(DRAINING_BODY)),
  connection: 'close',
}

/** What only the host knows about a request, read lazily: the peer address costs a syscall. */
class NodeRequestInfo implements RequestInfo {
  readonly #request: ServerRequest
  readonly waitUntil: RequestInfo['waitUntil']
  /** The target `request.url` was built from: routing reads it without building the URL. */
  readonly [RAW_TARGET]: string
  constructor(request: ServerRequest, target: string) {
    this.#request = request
    this.waitUntil = request.waitUntil as RequestInfo['waitUntil']
    this[RAW_TARGET] = target
  }
  get remoteAddress(): string | undefined {
    return this.#request.runtime?.node?.req.socket?.remoteAddress
  }
}

export async function startSvcServer(options: SvcServerOptions): Promise<SvcServer> {
  const where = 'startSvcServer()'
  checkServerOptions(options, where)
  const env = options.env ?? process.env
  const logger = options.logger ?? console
  const port = options.port ?? DEFAULT_PORT
  const host = resolveHost(options.host, env)
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const installSignalHandlers = options.installSignalHandlers ?? env.NODE_ENV !== 'test'

  const ownRuntime = options.runtime === undefined
  let runtime: TaskRuntime =
    options.runtime ?? createTaskRuntime({ routes: options.apiRoutes, store: options.store, env, logger })
  const staticFiles = options.staticDirs ? createStaticHandler(options.staticDirs, logger) : undefined
  const build = (apiRoutes: RuntimeApiRoute[], pages: RuntimePage[], taskRuntime: TaskRuntime) =>
    createSvcHandler({
      routes: apiRoutes,
      pages,
      cache: options.cache ?? {},
      globalHooks: options.globalHooks,
      runtime: taskRuntime,
      env,
      bodyLimit,
      dev: options.dev,
      logger,
      fallback: staticFiles,
      // The process outlives each response; close() drains task attempts itself.
      holdRuns: false,
      // FastResponse is written by srvx without building a Web Response first.
      responseClass: FastResponse as unknown as ResponseClass,
    })
  let handler = build(options.apiRoutes, options.pages, runtime)
  const cronDisabled = isEnabled(env[DISABLE_CRON_ENV])

  let draining = false
  let inflight = 0
  let onIdle: (() => void) | undefined
  const done = () => {
    if (--inflight === 0 && onIdle) onIdle()
  }

  // Work a request keeps alive past its response (background ISR renders).
  const background = new Set<Promise<unknown>>()
  const waitUntil = (promise: Promise<unknown>) => {
    const tracked = Promise.resolve(promise)
      .catch((error) => logger.error('[svc] background work failed:', error))
      .finally(() => background.delete(tracked))
    background.add(tracked)
  }

  // srvx's NodeRequest and FastResponse carry every request; the listener is
  // ours so in-flight requests can be counted and answered 503 while draining.
  // Only WebSocket upgrades are taken as upgrades: any other `Upgrade` offer
  // (`h2c` from `curl --http2`) is ignored, as RFC 9110 §7.8 allows, so its
  // request and body reach the routes. Node before 24.9 ignores the option.
  const httpServer = createServer({ shouldUpgradeCallback: (req) => req.headers.upgrade?.toLowerCase() === 'websocket' }, (req, res) => {
    inflight++
    // 'close' fires once, when the response is fully written or the client is gone.
    res.on('close', done)
    if (draining) {
      res.writeHead(503, DRAINING_HEADERS)
      res.end(DRAINING_BODY)
      return
    }
    const target = req.url
    // RFC 9112 §3.2: origin-form or absolute-form; anything else is a bad request.
    if (!target || (target.charCodeAt(0) !== 47 && target !== '*' && !URL.canParse(target))) {
      res.writeHead(400)
      res.end()
      return
    }
    const request = new NodeRequest({ req, res, maxRequestBodySize: bodyLimit }) as ServerRequest
    request.waitUntil = waitUntil
    const answer = handler.handle(request, new NodeRequestInfo(request, target))
    if (answer instanceof Promise) answer.then((response) => send(req, res, response), (error) => failResponse(req, res, error))
    else send(req, res, answer)
  })

  /**
   * Node discards a request body nobody touched, but not one a reader began
   * and left (a handler that answered early, or the body limit, which pauses
   * the stream): those bytes stay in the connection and the next request on
   * it would wait behind them forever. End the connection after the answer
   * instead (RFC 9112 §9.6), lingering so a client still sending reads the
   * answer rather than a reset.
   */
  function closeIfBodyUnread(req: IncomingMessage, res: ServerResponse): void {
    if (!req.complete && (req.readableFlowing !== null || req.readableDidRead) && !res.headersSent) {
      res.setHeader('connection', 'close')
      if (res.socket) lingerOnClose(res.socket)
    }
  }

  function send(req: IncomingMessage, res: ServerResponse, response: Response): void {
    closeIfBodyUnread(req, res)
    try {
      const sent = sendResponse(res, response)
      if (sent) sent.catch((error) => failResponse(req, res, error))
    } catch (error) {
      failResponse(req, res, error)
    }
  }

  function failResponse(req: IncomingMessage, res: ServerResponse, error: unknown): void {
    logger.error('[svc] could not send a response:', error)
    if (res.headersSent) res.destroy()
    else {
      closeIfBodyUnread(req, res)
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: 'Internal Server Error', code: 'INTERNAL_ERROR' }))
    }
  }

  const websockets = createWebSocketLayer({
    handler: () => handler,
    logger,
    draining: () => draining,
    maxMessageBytes: options.websocket?.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    maxBufferedBytes: options.websocket?.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
  })
  // Node hands CONNECT to this listener and, without one, drops the socket
  // with no answer. This server is an origin, not a proxy (RFC 9110 §9.3.6).
  httpServer.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', (error) => logger.warn(`[svc] CONNECT socket error from ${req.socket.remoteAddress}:`, error))
    // RFC 9110 §10.2.1: an empty Allow says the target allows no method here.
    const refusal = jsonResponse(405, 'METHOD_NOT_ALLOWED', 'CONNECT is not supported: this server is not a proxy; send requests to it directly', { allow: '' })
    writeResponse(socket, refusal).catch(() => socket.destroy())
  })

  httpServer.on('upgrade', (req, socket, head) => {
    websockets.handleUpgrade(req, socket, head).catch((error) => {
      logger.error(`[svc] upgrade of ${req.url} failed:`, error)
      socket.destroy()
    })
  })

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const address = httpServer.address()
  const boundPort = typeof address === 'object' && address ? address.port : port

  if (ownRuntime || getActiveTaskRuntime() === undefined) setActiveTaskRuntime(runtime)
  await (runtime as Partial<TaskRuntimeInstance>).recover?.()
  if (cronDisabled) {
    logger.info(`[svc] in-process cron is off (${DISABLE_CRON_ENV}); an external scheduler must fire scheduled tasks`)
  } else {
    runtime.startScheduler()
  }

  const closeWebSockets = (code: number = DEFAULT_CLOSE_CODE, reason?: string, filter?: (route: string) => boolean) => {
    checkCloseCode(code, reason)
    if (filter !== undefined && typeof filter !== 'function') {
      throw new TypeError(`closeWebSockets(code, reason, filter): filter must be a function of the route path (got ${describe(filter)})`)
    }
    websockets.closeAll(code, reason, filter)
  }

  const reload = async (app: { apiRoutes: RuntimeApiRoute[]; pages: RuntimePage[] }): Promise<void> => {
    if (closing) throw new Error('reload(): the server is closing')
    checkServerOptions({ apiRoutes: app?.apiRoutes, pages: app?.pages } as SvcServerOptions, 'reload()')
    if (!ownRuntime) {
      // A runtime passed in is the caller's: its tasks are theirs to change.
      handler = build(app.apiRoutes, app.pages, runtime)
      return
    }
    const old = runtime as TaskRuntimeInstance
    const next = createTaskRuntime({ routes: app.apiRoutes, store: old.store, env, logger })
    // Built before anything is swapped: a bad route leaves the old app serving.
    handler = build(app.apiRoutes, app.pages, next)
    runtime = next
    old.stopScheduler()
    if (getActiveTaskRuntime() === old) setActiveTaskRuntime(next)
    if (!cronDisabled) next.startScheduler()
    // Attempts in flight finish on the old runtime; both share the store, so
    // the new one then re-arms the waits the old one held.
    waitUntil(
      old
        .drain(shutdownTimeoutMs)
        .then(() => old.close())
        .then(() => next.recover()),
    )
  }

  const waitInflight = (deadline: number): Promise<boolean> => {
    if (inflight === 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(inflight === 0), Math.max(0, deadline - Date.now()))
      onIdle = () => {
        clearTimeout(timer)
        resolve(true)
      }
    })
  }

  let closing: Promise<void> | undefined
  const close = (): Promise<void> => {
    closing ??= (async () => {
      draining = true
      const deadline = Date.now() + shutdownTimeoutMs
      for (const signal of SIGNALS) process.off(signal, onSignal)
      runtime.stopScheduler()
      // Stop listening but keep idle keep-alive connections: a request already
      // on its way over one gets a 503 it can retry (issue §3) instead of a reset.
      // http.Server#close would also drop them (closeIdleConnections).
      const listenerClosed = new Promise<void>((resolve) => NetServer.prototype.close.call(httpServer, () => resolve()))
      websockets.closeAll(DEFAULT_CLOSE_CODE, 'Server shutting down')
      const [httpDone, wsDone] = await Promise.all([
        waitInflight(deadline),
        websockets.waitClosed(deadline),
        runtime.drain(Math.max(0, deadline - Date.now())).catch((error) => logger.error('[svc] task drain failed:', error)),
      ])
      if (!httpDone) logger.warn(`[svc] shutdown: ${inflight} request(s) still in flight after ${shutdownTimeoutMs} ms; closing their connections`)
      if (!wsDone) websockets.terminateAll()
      await websockets.dispose()
      await settle([...background], deadline)
      // Closes the idle keep-alive connections (and http.Server's sweep timer);
      // connections still writing a response end on their own.
      httpServer.close()
      if (!(await within(listenerClosed, deadline))) httpServer.closeAllConnections()
      await listenerClosed
      if (getActiveTaskRuntime() === runtime) setActiveTaskRuntime(null)
      if (ownRuntime) await (runtime as TaskRuntimeInstance).close()
    })()
    return closing
  }

  // Re-raising the signal once drained ends the process with the status a
  // signal gives (128 + n), without process.exit in library code.
  function onSignal(signal: NodeJS.Signals): void {
    logger.info(`[svc] ${signal}: draining (up to ${shutdownTimeoutMs} ms)`)
    close()
      .catch((error) => logger.error('[svc] shutdown failed:', error))
      .finally(() => process.kill(process.pid, signal))
  }
  if (installSignalHandlers) for (const signal of SIGNALS) process.once(signal, onSignal)

  return {
    server: httpServer,
    port: boundPort,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`,
    get runtime() {
      return runtime
    },
    get handler() {
      return handler
    },
    close,
    closeWebSockets,
    reload,
  }
}

/** Whether `promise` settles before `deadline` (epoch ms). */
async function within(promise: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const settled = await Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())))),
  ])
  clearTimeout(timer)
  return settled
}

/** Waits for `promises` until `deadline` (epoch ms). */
async function settle(promises: Promise<unknown>[], deadline: number): Promise<void> {
  if (promises.length === 0) return
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now())))),
  ])
  clearTimeout(timer)
}

/** RFC 6455 §7.4: 1000, 1001-1003, 1007-1014 are sendable; 3000-4999 are for libraries and apps. */
function checkCloseCode(code: number, reason: string | undefined): void {
  const ok = Number.isInteger(code) && (code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999))
  if (!ok) throw new RangeError(`closeWebSockets(code): code must be 1000-1003, 1007-1014 or 3000-4999 (got ${describe(code)})`)
  if (reason !== undefined && (typeof reason !== 'string' || new TextEncoder().encode(reason).length > 123)) {
    // A close frame's payload is at most 125 bytes: 2 for the code, 123 for the reason (RFC 6455 §5.5).
    throw new RangeError(`closeWebSockets(code, reason): reason must be a string of at most 123 bytes (got ${describe(reason)})`)
  }
}
