/**
 * `createSvcHandler()`: the whole HTTP surface as one fetch function, which
 * `startSvcServer` and every target mount. Targets only turn their
 * platform's events into `Request`s, so all HTTP behaviour lives here and is
 * proven once. A target mounts it as `createCoreHandler()` with only the
 * parts it reaches and the app uses (`HostParts`), and its bundle leaves the
 * others out: a worker of routes carries no task engine. Edge-safe.
 */
import type { RequestSpan } from './telemetry/types.ts'
import type { RequestInfo } from './types.ts'
import { EVENT_STREAMS } from './admin/event-streams.ts'
import { loopbackExemption } from './admin/loopback-exemption.ts'
import { isEventsPath } from './admin/send-events.ts'
import { isDashboardPath } from './dashboard/route.ts'
import { buildApp } from './app/create.ts'
import { jsonError } from './http/errors.ts'
import { requestPath } from './http/path.ts'
import type { ResponseClass } from './http/types.ts'
import { isWebSocketUpgrade } from './app/upgrade.ts'
import { PAGES } from './pages/part.ts'
import { compiledRouter, patternRouter } from './app/router.ts'
import { isTasksPath, TASK_SURFACE } from './task-surface.ts'
import { resolveHandlerOptions } from './handler-config.ts'
import type { CoreHandler, HandlerConfig, HostParts, SvcHandler, SvcHandlerOptions } from './handler-options.ts'

export type { CoreHandler, HandlerConfig, HostParts, SvcHandler, SvcHandlerOptions } from './handler-options.ts'

/**
 * Serves, in order: `/__tasks*` (auth-gated task admin surface),
 * `/__svc/dashboard*` (where it is served), `/__health`, `/__svc/revalidate` (when a cache is on and a page is
 * hybrid), then global hooks
 * around API routes, server/hybrid pages and the fallback, then 404.
 */
export function createSvcHandler(options: SvcHandlerOptions): SvcHandler {
  return createCoreHandler(options, {
    streams: EVENT_STREAMS,
    loopback: loopbackExemption,
    tasks: TASK_SURFACE,
    pages: PAGES,
    router: compiledRouter,
  }) as SvcHandler
}

/**
 * `createSvcHandler` with only the `parts` a host gives. The Cloudflare
 * worker gives no streams (its runs change in the tasks Durable Object, out
 * of its reach) and no loopback exemption (it reports no peer address); an
 * app without tasks gives no task part, one without pages no pages part.
 */
export function createCoreHandler(options: SvcHandlerOptions, parts: HostParts = {}): CoreHandler {
  return handlerOf(resolveHandlerOptions(options, 'createSvcHandler()', parts), parts)
}

/** The handler of a checked config (`resolveHandlerOptions`, or a server's own edge). */
export function handlerOf(config: HandlerConfig, parts: HostParts): CoreHandler {
  const { where, env, logger, R, dev, bodyLimit, telemetry } = config
  const cache = parts.pages?.createCache(config.cache, where, logger)
  const requestSpans = new WeakMap<Request, RequestSpan>()
  const spanOf = telemetry && ((request: Request) => requestSpans.get(request))
  const tasks = config.tasks
  const surface = tasks && parts.tasks?.create({ ...config, tasks }, { streams: parts.streams, loopback: parts.loopback, spanOf })

  const { app, direct } = buildApp({
    where,
    routes: config.routes,
    pages: config.pages,
    pagesPart: parts.pages,
    globalHooks: config.globalHooks,
    R,
    dev,
    logger,
    bodyLimit,
    cache,
    env: () => env,
    info: (c) => c.env as RequestInfo | undefined,
    loopback: parts.loopback,
    fallback: config.fallback,
    noteRoute: spanOf && ((request, pattern) => spanOf(request)?.route(pattern)),
    router: parts.router ?? patternRouter,
  })

  const serve = (request: Request, info?: RequestInfo): Response | Promise<Response> => {
    const pathname = requestPath(request, info)
    // The admin surface (`/__tasks`) and the dashboard (`/__svc/dashboard`)
    // both live under `/__`: other paths skip their checks.
    if (pathname.startsWith('/__')) {
      // `/__tasks*` and `/__svc/*` speak plain HTTP. A WebSocket handshake is
      // refused before any handler runs (RFC 6455 §4.2.2): a host that takes
      // it as an upgrade (Node) writes the answer whole, and an event stream
      // never ends.
      if ((isTasksPath(pathname) || pathname.startsWith('/__svc/')) && isWebSocketUpgrade(request)) {
        return jsonError(
          R,
          400,
          'WEBSOCKET_NOT_SUPPORTED',
          `${pathname} takes no WebSocket connections: the task admin surface and /__svc/* are plain HTTP (GET /__tasks/events streams run changes as Server-Sent Events)`,
        )
      }
      const answer = surface ? surface.serve(request, pathname, info) : noTasks(R, pathname)
      if (answer) return answer
    }
    // Hono's `env` argument carries the request info to the built-ins.
    return direct(request, pathname) ?? app.fetch(request, info)
  }

  // Each request under a server span, which the route that answers it names.
  const handle =
    telemetry === undefined
      ? serve
      : (request: Request, info?: RequestInfo) =>
          telemetry.request(request, (span) => {
            if (span !== undefined) requestSpans.set(request, span)
            return serve(request, info)
          })

  return {
    runtime: surface?.runtime,
    cache,
    app,
    handle,
    fetch(request, info) {
      const res = handle(request, info)
      return res instanceof Promise ? res : Promise.resolve(res)
    },
  }
}

/** What the task surface's paths answer in an app that has no tasks. */
function noTasks(R: ResponseClass, pathname: string): Response | undefined {
  if (!isTasksPath(pathname) && !isEventsPath(pathname) && !isDashboardPath(pathname)) return undefined
  return jsonError(
    R,
    404,
    'NO_TASKS',
    `${pathname} serves task runs, and this app has no tasks: a route becomes one with export const route = { kind: 'task' } (docs/tasks.md)`,
  )
}
