/**
 * `createApiApp()` and the app builder `createSvcHandler()` shares with it.
 *
 * Order of matching, first wins:
 * 1. built-ins: `GET /__health`, `POST /__svc/revalidate` (with a
 *    `revalidateWebhook`, or an ISR cache and a hybrid page to purge);
 * 2. global hooks, around everything below;
 * 3. API routes, then server and hybrid pages;
 * 4. the fallback (static files on Node), then 404 `NOT_FOUND`.
 */
import type { Context, Hono } from 'hono'
import { HonoBase } from 'hono/hono-base'
import type { GlobalHooks, Logger, RequestInfo, RuntimeApiRoute, RuntimePage } from '../types.ts'
import { DEFAULT_BODY_LIMIT } from '../http/body.ts'
import type { LoopbackExemption } from '../admin/auth.ts'
import { loopbackExemption } from '../admin/loopback-exemption.ts'
import type { EnvLike } from '../env.ts'
import { processEnv, stringBindings } from '../env.ts'
import type { IsrCache } from '../pages/isr.ts'
import { PAGES, type PagesPart } from '../pages/part.ts'
import { REVALIDATE_PATH, type RevalidateWebhook } from '../pages/revalidate.ts'
import { describe } from '../describe.ts'
import { methodNotAllowed, notFound } from '../http/errors.ts'
import { honoRequestPath } from '../http/path.ts'
import type { ResponseClass } from '../http/types.ts'
import { type DirectRoutes, directRoutes } from './direct.ts'
import { GlobalResponse } from './global-response.ts'
import { HEALTH_PATH, healthResponse } from './health.ts'
import { createErrorResponder, hasHooks, hooksMiddleware, normalizeHooks } from './hooks.ts'
import { mountRoutes } from './routes.ts'
import type { ApiAppOptions } from './types.ts'
import { compiledRouter, type RouterFactory } from './router.ts'

/** The app `createApiApp` returns: a Hono app, with the standard `fetch(request, env?, ctx?)`. */
export type ApiApp = Hono

export interface BuildAppOptions {
  where: string
  routes: readonly RuntimeApiRoute[]
  pages?: readonly RuntimePage[]
  /**
   * What renders `pages` and serves the revalidate endpoint.
   * @default none: `pages` and `webhook` must then be absent
   */
  pagesPart?: PagesPart
  globalHooks?: GlobalHooks
  R: ResponseClass
  dev: boolean
  logger: Logger
  bodyLimit: number
  cache?: IsrCache
  webhook?: RevalidateWebhook
  /** Secret and NODE_ENV for the revalidate endpoint, per request. */
  env: (c: Context) => EnvLike
  info: (c: Context) => RequestInfo | undefined
  /** The development exemption of the revalidate endpoint's auth, where the host reports peer addresses. */
  loopback?: LoopbackExemption
  fallback?: (request: Request) => Promise<Response | undefined>
  /** Told of the route pattern that answers each request (telemetry's `http.route`). */
  noteRoute?: (request: Request, pattern: string) => void
  /** The router the app matches with (router.ts). */
  router: RouterFactory
}

export interface BuiltApp {
  app: ApiApp
  /** Answers requests to fixed-path routes without Hono's dispatch, where the answer is the same (direct.ts). */
  direct: DirectRoutes
}

export function buildApp(o: BuildAppOptions): BuiltApp {
  const app = new HonoBase({ getPath: honoRequestPath, router: o.router() }) as Hono
  const hooks = normalizeHooks(o.globalHooks, o.where)
  const fail = createErrorResponder(hooks, o.R, o.dev, o.logger)
  const R = o.R

  app.all(HEALTH_PATH, (c) => {
    const method = c.req.raw.method
    return method === 'GET' || method === 'HEAD' ? healthResponse(R) : methodNotAllowed(R, method, HEALTH_PATH, 'GET, HEAD')
  })
  const part = o.pagesPart
  if (!part && (o.pages?.length || o.webhook)) {
    throw new TypeError(`${o.where}: pages are given, but this host was built for an app without pages; build the app again (svc build)`)
  }
  const pages = part && o.pages ? part.plan(o.pages, o.cache !== undefined, o.logger, o.where) : []
  // Mounted only where there is something to purge: elsewhere the path is
  // an ordinary 404 rather than an authenticated endpoint that does nothing.
  if (part && ((o.cache && pages.some((page) => page.cached)) || o.webhook)) {
    const revalidate = part.revalidate({
      R,
      bodyLimit: o.bodyLimit,
      logger: o.logger,
      dev: o.dev,
      env: o.env,
      info: o.info,
      cache: o.cache,
      webhook: o.webhook,
      loopback: o.loopback,
    })
    app.all(REVALIDATE_PATH, revalidate)
  }
  // Without hooks, no middleware is registered: a route is then the only
  // handler its path matches, which keeps Hono on its single-handler path.
  if (hasHooks(hooks)) app.use('*', hooksMiddleware(hooks, fail, o.logger))
  const mounted = mountRoutes(app, o.routes, { R, fail, bodyLimit: o.bodyLimit, noteRoute: o.noteRoute }, o.where)
  part?.mount(app, pages, { R, fail, cache: o.cache })

  const fallback = o.fallback
  app.notFound(async (c) => {
    if (fallback) {
      try {
        const res = await fallback(c.req.raw)
        if (res) return res
      } catch (error) {
        return fail(error, c)
      }
    }
    return notFound(R, c.req.raw.method, c.req.path)
  })
  // Routes catch their own errors; this covers anything thrown elsewhere.
  app.onError((error, c) => fail(error, c))
  return { app, direct: directRoutes(app, mounted) }
}

/** Checks the options both `createApiApp` and `createSvcHandler` take. */
export function checkCommonOptions(options: unknown, where: string): void {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object with routes (got ${describe(options)})`)
  }
  const o = options as Record<string, unknown>
  if (!Array.isArray(o.routes)) throw new TypeError(`${where}: routes must be an array of API routes (got ${describe(o.routes)})`)
  checkAppBasics(o, where)
}

/** Checks the options every host of an app takes, whatever it calls its routes: `bodyLimit`, `dev`, `responseClass`, `env`. */
export function checkAppBasics(o: Record<string, unknown>, where: string): void {
  if (o.bodyLimit !== undefined && !(Number.isInteger(o.bodyLimit) && (o.bodyLimit as number) > 0)) {
    throw new RangeError(`${where}: bodyLimit must be a positive whole number of bytes (got ${describe(o.bodyLimit)})`)
  }
  if (o.dev !== undefined && typeof o.dev !== 'boolean') throw new TypeError(`${where}: dev must be a boolean (got ${describe(o.dev)})`)
  if (o.responseClass !== undefined && typeof o.responseClass !== 'function') {
    throw new TypeError(`${where}: responseClass must be a Response constructor (got ${describe(o.responseClass)})`)
  }
  if (o.env !== undefined && (o.env === null || typeof o.env !== 'object')) {
    throw new TypeError(`${where}: env must be an object of environment variables (got ${describe(o.env)})`)
  }
}

/**
 * Builds the API application: routes, global hooks, `/__health` and, with
 * `revalidateWebhook`, `POST /__svc/revalidate`. No pages, static files or
 * WebSockets (hot routes answer 426 here; `startSvcServer` completes
 * upgrades). Edge-safe. Task routes are skipped.
 */
export function createApiApp(options: ApiAppOptions): ApiApp {
  const where = 'createApiApp()'
  checkCommonOptions(options, where)
  const webhook = options.revalidateWebhook
  if (webhook !== undefined && typeof webhook !== 'function') {
    throw new TypeError(`${where}: revalidateWebhook must be a function (got ${describe(webhook)})`)
  }
  const baseEnv = options.env ?? processEnv()
  const { app } = buildApp({
    where,
    routes: options.routes,
    globalHooks: options.globalHooks,
    R: options.responseClass ?? GlobalResponse,
    dev: options.dev ?? baseEnv.NODE_ENV === 'development',
    logger: options.logger ?? console,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    webhook,
    pagesPart: webhook ? PAGES : undefined,
    // Edge bindings arrive as fetch's `env` argument; they win over the base env.
    env: (c) => {
      const bindings = stringBindings(c.env)
      return Object.keys(bindings).length > 0 ? { ...baseEnv, ...bindings } : baseEnv
    },
    info: (c) => ({ remoteAddress: remoteAddressOf(c) }),
    loopback: loopbackExemption,
    router: compiledRouter,
  })
  return app
}

/**
 * The socket address, where the host exposes one: `RequestInfo` passed as
 * fetch's `env` argument, else srvx's `request.ip` (from the socket unless
 * srvx is told to trust proxies). Never `X-Forwarded-For`.
 */
function remoteAddressOf(c: Context): string | undefined {
  const fromInfo = (c.env as RequestInfo | undefined)?.remoteAddress
  if (typeof fromInfo === 'string') return fromInfo
  const ip = (c.req.raw as { ip?: unknown }).ip
  return typeof ip === 'string' ? ip : undefined
}
