/**
 * What `createSvcHandler()` takes and returns, and the parts only some hosts
 * give it (`HostParts`). Edge-safe.
 */
import type { Telemetry } from './telemetry/types.ts'
import type { GlobalHooks, Logger, RequestInfo, RuntimeApiRoute, RuntimePage, TaskRuntime } from './types.ts'
import type { LoopbackExemption } from './admin/auth.ts'
import type { EventStreams, RunEventsOptions } from './admin/streams.ts'
import type { DashboardPage } from './dashboard/route.ts'
import type { ApiApp } from './app/create.ts'
import type { ResponseClass } from './http/types.ts'
import type { IsrCache, SvcCacheConfig } from './pages/isr.ts'
import type { CronClock } from './tasks/definitions/cron-clock.ts'
import type { EventSchemas } from './events/schemas.ts'
import type { EnvLike } from './env.ts'
import type { RequestSpan } from './telemetry/types.ts'
import type { PagesPart } from './pages/part.ts'
import type { RouterFactory } from './app/router.ts'

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
  /**
   * The task runtime and the paths that drive it (`TASK_SURFACE`):
   * `/__tasks*`, `/__events*` and the dashboard.
   * @default none: the app has no tasks; those paths answer 404 `NO_TASKS`, and routes that are tasks are refused
   */
  tasks?: TaskSurfacePart
  /**
   * Server and hybrid pages, their ISR cache and the revalidate endpoint (`PAGES`).
   * @default none: the app has no pages; pages given are refused, and `cache` is not read
   */
  pages?: PagesPart
  /**
   * The router of the app's Hono instance (app/router.ts).
   * @default Hono's PatternRouter, the smallest; createSvcHandler and the servers take its compiled default
   */
  router?: RouterFactory
}

/** A handler made with only some parts: without `tasks`, it has no runtime. */
export interface CoreHandler extends Omit<SvcHandler, 'runtime'> {
  /** The task runtime `/__tasks` drives, when the handler has the task part. */
  readonly runtime: TaskRuntime | undefined
}

/**
 * A handler's options checked once, at the edge of the host that makes it,
 * with their defaults applied (`resolveHandlerOptions`; the Node, Bun and
 * Deno servers build theirs from their own options). Nothing past the edge
 * checks them again.
 */
export interface HandlerConfig {
  /** The API named in messages: `createSvcHandler()`. */
  where: string
  routes: readonly RuntimeApiRoute[]
  pages: readonly RuntimePage[]
  env: EnvLike
  logger: Logger
  R: ResponseClass
  dev: boolean
  /** The largest body a route's schema or the revalidate endpoint reads. */
  bodyLimit: number
  /** `bodyLimit` as the options gave it: without it, the admin surface reads as much as a run may hold. */
  givenBodyLimit: number | undefined
  globalHooks?: GlobalHooks
  fallback?: (request: Request) => Promise<Response | undefined>
  telemetry?: Telemetry
  cache?: SvcCacheConfig | false
  /** The task options, when the handler has the task part. */
  tasks?: TaskOptions
}

/** The options of the task surface, checked by the task part (`TaskSurfacePart.resolve`). */
export interface TaskOptions {
  /** The runtime to drive; without it, the surface makes one in memory from the routes. */
  runtime?: TaskRuntime
  events?: EventSchemas
  cron?: CronClock
  maxPayloadBytes?: number
  holdRuns: boolean
  runEvents?: RunEventsOptions
  dashboard?: boolean
  dashboardPage?: DashboardPage
}

/** What only the handler knows, which the task surface is handed as it is made. */
export interface TaskSurfaceContext {
  streams?: EventStreams
  loopback?: LoopbackExemption
  /** The span of a request, with telemetry: the trace a run it starts continues. */
  spanOf?: (request: Request) => RequestSpan | undefined
}

export interface TaskSurface {
  readonly runtime: TaskRuntime
  /** Answers a path under `/__` that is the task surface's, or `undefined` for any other. */
  serve(request: Request, pathname: string, info: RequestInfo | undefined): Response | Promise<Response> | undefined
}

/** A handler's task surface; a part, so that an app that has no tasks leaves it out of its bundle. */
export interface TaskSurfacePart {
  /** Checks the task options of `options` and applies their defaults: a host's edge calls it once. */
  resolve(options: Pick<SvcHandlerOptions, keyof TaskOptions>, where: string): TaskOptions
  /** Makes the surface from a checked config. */
  create(config: HandlerConfig & { tasks: TaskOptions }, ctx: TaskSurfaceContext): TaskSurface
}
