/**
 * `createSvcHandler()`: the whole HTTP surface as one fetch function, which
 * `startSvcServer` and every target mount. Targets only turn their
 * platform's events into `Request`s, so all HTTP behaviour lives here and is
 * proven once. The Cloudflare worker mounts it as `createCoreHandler()`,
 * without the parts it cannot reach (`HostParts`), which its bundle then
 * leaves out. Edge-safe.
 */
import { type RequestSpan, type Telemetry, telemetryOptionProblem } from './telemetry/types.ts'
import type { GlobalHooks, Logger, RequestInfo, RuntimeApiRoute, RuntimePage, TaskRuntime } from './types.ts'
import { DEFAULT_BODY_LIMIT } from './http/body.ts'
import type { LoopbackExemption } from './admin/auth.ts'
import { EVENT_STREAMS } from './admin/event-streams.ts'
import { loopbackExemption } from './admin/loopback-exemption.ts'
import { checkRunEvents, type EventStreams, type RunEventsOptions } from './admin/streams.ts'
import { createAdminHandler, TASKS_PREFIX } from './admin/tasks.ts'
import { checkTaskSecretStrength } from './admin/secret-strength.ts'
import { createSendEventsHandler, isEventsPath } from './admin/send-events.ts'
import { createListEventsHandler, isEventListing } from './admin/list-events.ts'
import { adminRoutePattern } from './admin/route-pattern.ts'
import { dashboardAccess, dashboardProblem } from './dashboard/access.ts'
import { type DashboardPage, dashboardNotIncluded, isDashboardPath } from './dashboard/route.ts'
import { buildApp, checkCommonOptions, type ApiApp } from './app/create.ts'
import { jsonError } from './http/errors.ts'
import { GlobalResponse } from './app/global-response.ts'
import { requestPath } from './http/path.ts'
import type { ResponseClass } from './http/types.ts'
import { isWebSocketUpgrade } from './app/upgrade.ts'
import { processEnv } from './env.ts'
import { createIsrCache, type IsrCache, type SvcCacheConfig } from './pages/isr.ts'
import type { CronClock } from './tasks/cron-clock.ts'
import { createCoreRuntime } from './tasks/runtime.ts'
import { checkMaxPayloadBytes } from './tasks/payload-limit.ts'
import { describe } from './describe.ts'
import type { EventSchemas } from './events/schemas.ts'

export interface SvcHandlerOptions {
  /** API routes with loaded modules; task routes feed the task runtime. */
  routes: readonly RuntimeApiRoute[]
  /**
   * The app's event schemas (the `events` export of `src/events.ts`), for
   * the task runtime this handler makes; see `TaskRuntimeOptions.events`.
   * Ignored with `runtime`, which has its own.
   */
  events?: EventSchemas
  /**
   * Where spans, metrics and log records go (docs/observability.md), such
   * as `otelTelemetry(api)`: each request is served under a server span,
   * and the task runtime this handler makes (not one given as `runtime`)
   * traces its runs.
   * @default none
   */
  telemetry?: Telemetry
  /**
   * Pages with loaded modules. Server and hybrid pages render here; static
   * and client pages are left to the host's static files.
   * @default []
   */
  pages?: readonly RuntimePage[]
  /**
   * ISR cache for hybrid pages; `false` turns it off. While a cache is on
   * and at least one page is hybrid, `POST /__svc/revalidate` is mounted.
   * @default { store: 'memory' }
   */
  cache?: SvcCacheConfig | false
  /**
   * `{ onRequest?, onError?, onResponse? }` around routes, pages and the fallback.
   * @default no hooks
   */
  globalHooks?: GlobalHooks
  /**
   * The task runtime behind `/__tasks`. Pass one to share it (with a
   * durable store, say); the handler never starts or stops its scheduler.
   * @default createTaskRuntime({ routes, env, logger, cron })
   */
  runtime?: TaskRuntime
  /**
   * The cron clock of the runtime the handler creates (see
   * `TaskRuntimeOptions.cron`): it checks schedules in full and gives the
   * dashboard each one's next tick. Ignored with `runtime`.
   * @default none, so that workers, whose platforms fire the schedules, leave croner out; pass cronerClock elsewhere
   */
  cron?: CronClock
  /**
   * Environment: `SVC_TASK_SECRET`, `NODE_ENV`. Edge
   * targets pass their bindings; the Node server passes `process.env`.
   * Note: an `SVC_TASK_SECRET` shorter than 32 bytes throws a `RangeError`,
   * except in development (`dev`, or NODE_ENV development or test), where
   * it is a warning; make one with `openssl rand -hex 32`.
   * @default globalThis.process?.env, or {} where there is no `process`
   */
  env?: Record<string, string | undefined>
  /**
   * Largest JSON body read by the admin surface, the revalidate endpoint and
   * `schema.body` validation; larger bodies get 413 `PAYLOAD_TOO_LARGE`.
   * Note: without it, the admin surface reads bodies up to the runtime's
   * `maxPayloadBytes` where that is larger, so any input a run may hold
   * can be sent to `POST /__tasks/<name>`.
   * @default 1048576 (1 MiB)
   */
  bodyLimit?: number
  /**
   * The largest input, result, step output and token payload of a run, in
   * bytes of UTF-8 JSON, for the runtime the handler creates (see
   * `TaskRuntimeOptions.maxPayloadBytes`). Ignored with `runtime`.
   * @default 1048576
   */
  maxPayloadBytes?: number
  /**
   * Adds the error message and stack to 500 bodies.
   * @default env.NODE_ENV === 'development'
   */
  dev?: boolean
  /** @default console */
  logger?: Logger
  /**
   * Answers requests no route or page matched, before the 404; resolve to
   * `undefined` to pass. `startSvcServer` serves `staticDirs` here.
   * @default none (404)
   */
  fallback?: (request: Request) => Promise<Response | undefined>
  /**
   * Hands every run started over `POST /__tasks/<name>` to `info.waitUntil`
   * until it completes or fails, for hosts that freeze or recycle after the
   * response (edge workers, function platforms). A long-lived server sets it
   * to false: its process outlives the response, and shutdown drains task
   * attempts itself instead of waiting for suspended runs to finish.
   * @default true
   */
  holdRuns?: boolean
  /**
   * The constructor responses are built with. Note: the Node server passes
   * srvx's `FastResponse`, which it writes without a full Web `Response`.
   * @default the `Response` global at the time each response is built
   */
  responseClass?: ResponseClass
  /**
   * Serves the runs dashboard at `/__svc/dashboard` to everyone; the page
   * shows no data until the user enters the task secret. `false` never
   * serves it.
   * @default true when env.SVC_DASHBOARD is 1; else, when NODE_ENV is development, served to loopback peers only; else off
   */
  dashboard?: boolean
  /**
   * The dashboard page to serve. `startSvcServer` passes the one svc ships
   * (`DASHBOARD_PAGE` from `svcjs/node`); it is an option so that edge and
   * function bundles, which do not serve the page, do not carry it.
   * @default none: the dashboard's paths answer 404 DASHBOARD_NOT_INCLUDED
   */
  dashboardPage?: DashboardPage
  /**
   * `{ maxStreams?, maxQueuedBytes? }`: limits of `GET /__tasks/events`, the
   * run-change stream. Past `maxStreams` open on the runtime, 503 with
   * `Retry-After`; a client that leaves more than `maxQueuedBytes` unread is
   * dropped.
   * @default { maxStreams: 64, maxQueuedBytes: 262144 }
   */
  runEvents?: RunEventsOptions
}

export interface SvcHandler {
  /**
   * Answers one request. `info` carries what only the host knows: the
   * socket's peer address (for the loopback rule of the admin auth) and
   * `waitUntil` (for background ISR renders on edge platforms).
   */
  fetch(request: Request, info?: RequestInfo): Promise<Response>
  /**
   * `fetch` without wrapping a synchronous answer in a promise, for hosts
   * that accept either (the Node server).
   */
  handle(request: Request, info?: RequestInfo): Response | Promise<Response>
  /** The task runtime `/__tasks` drives. */
  readonly runtime: TaskRuntime
  /** The ISR cache, when one is configured. */
  readonly cache: IsrCache | undefined
  /** The Hono app behind everything but `/__tasks`. */
  readonly app: ApiApp
}

/**
 * What only some hosts reach, which the others leave out of their bundles.
 * `createSvcHandler` passes both.
 */
export interface HostParts {
  /**
   * The event streams, `GET /__tasks/events` and a run's stream
   * (`EVENT_STREAMS`).
   * @default none: both answer 501 `NOT_IMPLEMENTED`, as where the runs change in another place
   */
  streams?: EventStreams
  /**
   * The development exemption from the task secret (`loopbackExemption`),
   * which only requests with a peer address (`RequestInfo.remoteAddress`) reach.
   * @default none: without a secret, every request gets 401
   */
  loopback?: LoopbackExemption
}

/**
 * Serves, in order: `/__tasks*` (auth-gated task admin surface),
 * `/__svc/dashboard*` (where it is served), `/__health`, `/__svc/revalidate` (when a cache is on and a page is
 * hybrid), then global hooks
 * around API routes, server/hybrid pages and the fallback, then 404.
 */
export function createSvcHandler(options: SvcHandlerOptions): SvcHandler {
  return createCoreHandler(options, { streams: EVENT_STREAMS, loopback: loopbackExemption })
}

/**
 * `createSvcHandler` with only the `parts` a host gives. The Cloudflare
 * worker gives none: its runs change in the tasks Durable Object, out of its
 * reach, and it reports no peer address.
 */
export function createCoreHandler(options: SvcHandlerOptions, parts: HostParts = {}): SvcHandler {
  const where = 'createSvcHandler()'
  checkCommonOptions(options, where)
  const telemetryProblem = telemetryOptionProblem(options.telemetry)
  if (telemetryProblem) throw new TypeError(`${where}: ${telemetryProblem}`)
  const env = options.env ?? processEnv()
  const logger = options.logger ?? console
  const R = options.responseClass ?? GlobalResponse
  const dev = options.dev ?? env.NODE_ENV === 'development'
  checkTaskSecretStrength(env, dev, where, logger)
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const pages = options.pages ?? []
  if (!Array.isArray(pages)) throw new TypeError(`${where}: pages must be an array of pages (got ${describe(pages)})`)
  if (options.holdRuns !== undefined && typeof options.holdRuns !== 'boolean') {
    throw new TypeError(`${where}: holdRuns must be a boolean (got ${describe(options.holdRuns)})`)
  }
  if (options.fallback !== undefined && typeof options.fallback !== 'function') {
    throw new TypeError(`${where}: fallback must be a function (got ${describe(options.fallback)})`)
  }
  const dashboardOption = dashboardProblem(options.dashboard)
  if (dashboardOption) throw new TypeError(`${where}: ${dashboardOption}`)
  checkRunEvents(options.runEvents, where)
  // A runtime of its own keeps its runs in memory, which no other process shares.
  const runtime =
    options.runtime ??
    createCoreRuntime({
      routes: options.routes,
      env,
      logger,
      cron: options.cron,
      maxPayloadBytes: checkMaxPayloadBytes(options.maxPayloadBytes, where),
      events: options.events,
      telemetry: options.telemetry,
    })
  if (typeof runtime?.trigger !== 'function' || typeof runtime.getRun !== 'function') {
    throw new TypeError(`${where}: runtime must be a TaskRuntime, such as createTaskRuntime() returns (got ${describe(runtime)})`)
  }
  // A trigger's body is its input: the admin surface reads as much as a run may hold.
  const adminBodyLimit = options.bodyLimit ?? Math.max(bodyLimit, runtime.maxPayloadBytes ?? 0)
  const cache = createIsrCache(options.cache, where, logger)
  const telemetry = options.telemetry
  const requestSpans = new WeakMap<Request, RequestSpan>()

  const { app, direct } = buildApp({
    where,
    routes: options.routes,
    pages,
    globalHooks: options.globalHooks,
    R,
    dev,
    logger,
    bodyLimit,
    cache,
    env: () => env,
    info: (c) => c.env as RequestInfo | undefined,
    loopback: parts.loopback,
    fallback: options.fallback,
    noteRoute: telemetry && ((request, pattern) => requestSpans.get(request)?.route(pattern)),
  })
  const admin = createAdminHandler({
    runtime,
    env,
    bodyLimit: adminBodyLimit,
    R,
    logger,
    dev,
    holdRuns: options.holdRuns ?? true,
    runEvents: options.runEvents,
    streams: parts.streams,
    loopback: parts.loopback,
    traceOf: telemetry && ((request) => requestSpans.get(request)?.trace()),
  })
  const sendEvents = createSendEventsHandler({ runtime, env, bodyLimit: adminBodyLimit, R, logger, dev, loopback: parts.loopback })
  const listEvents = createListEventsHandler({ runtime, env, R, logger, dev, loopback: parts.loopback })
  const dashboard = options.dashboardPage
    ? options.dashboardPage.createHandler({ access: dashboardAccess(options.dashboard, env), runtime, env, R })
    : dashboardNotIncluded(R)

  const serve = (request: Request, info?: RequestInfo): Response | Promise<Response> => {
    const pathname = requestPath(request, info)
    // The admin surface (`/__tasks`) and the dashboard (`/__svc/dashboard`)
    // both live under `/__`: other paths skip their checks.
    if (pathname.startsWith('/__')) {
      // Admin spans are named by pattern (`POST /__tasks/{name}`), as routes' spans are.
      const pattern = telemetry && adminRoutePattern(request.method, pathname)
      if (pattern) requestSpans.get(request)?.route(pattern)
      const tasks =
        pathname.startsWith(TASKS_PREFIX) && (pathname.length === TASKS_PREFIX.length || pathname.charCodeAt(TASKS_PREFIX.length) === 47)
      // `/__tasks*` and `/__svc/*` speak plain HTTP. A WebSocket handshake is
      // refused before any handler runs (RFC 6455 §4.2.2): a host that takes
      // it as an upgrade (Node) writes the answer whole, and an event stream
      // never ends.
      if ((tasks || pathname.startsWith('/__svc/')) && isWebSocketUpgrade(request)) {
        return jsonError(
          R,
          400,
          'WEBSOCKET_NOT_SUPPORTED',
          `${pathname} takes no WebSocket connections: the task admin surface and /__svc/* are plain HTTP (GET /__tasks/events streams run changes as Server-Sent Events)`,
        )
      }
      if (tasks) return admin(request, pathname, info)
      if (isEventsPath(pathname)) {
        return isEventListing(request, pathname) ? listEvents(request, pathname, info) : sendEvents(request, pathname, info)
      }
      const page = isDashboardPath(pathname) ? dashboard(request, pathname, info) : undefined
      if (page) return page
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
    runtime,
    cache,
    app,
    handle,
    fetch(request, info) {
      const res = handle(request, info)
      return res instanceof Promise ? res : Promise.resolve(res)
    },
  }
}
