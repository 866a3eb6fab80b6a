/**
 * Requests to an API route with a fixed path go straight to the route,
 * without Hono's dispatch: no context, router lookup or middleware chain per
 * request, which is a measurable share of a small JSON answer.
 *
 * Only where Hono would run that route's handler first, which then answers
 * without calling the next: the table is checked against the app's own
 * router, so a global hook, or a parameter route registered before it that
 * also matches the path, keeps the request on Hono.
 * The route sees the same `req` (Hono's request, with the router's match for
 * `routePath` and `param()`). HEAD stays on Hono, which answers it as GET
 * without the body.
 */
import { HonoRequest } from 'hono/request'
import type { Hono } from 'hono'
import type { Result } from 'hono/router'
import { HTTP_METHODS } from '../types.ts'
import type { MountedRoute, RouteServe } from './routes.ts'

/** Answers a request to a fixed-path route, or returns undefined for Hono to route it. */
export type DirectRoutes = (request: Request, path: string) => Response | Promise<Response> | undefined

const DIRECT_METHODS: ReadonlySet<string> = new Set(HTTP_METHODS.filter((method) => method !== 'HEAD'))

interface DirectRoute {
  serve: RouteServe
  // biome-ignore lint/suspicious/noExplicitAny: Hono's handler and route types, as its router returns them
  match: Result<[any, any]>
}

export function directRoutes(app: Hono, mounted: readonly MountedRoute[]): DirectRoutes {
  let table: Map<string, DirectRoute> | undefined
  return (request, path) => {
    // Built on the first request, when Hono builds its own matcher: routes
    // added to the app before then are seen by both.
    table ??= buildTable(app, mounted)
    const route = table.get(path)
    if (route === undefined) return undefined
    const method = request.method
    if (!DIRECT_METHODS.has(method)) return undefined
    return route.serve(new HonoRequest(request, path, route.match), method)
  }
}

function buildTable(app: Hono, mounted: readonly MountedRoute[]): Map<string, DirectRoute> {
  const table = new Map<string, DirectRoute>()
  for (const { path, handler, serve } of mounted) {
    if (path.includes(':') || path.includes('*') || table.has(path)) continue
    const match = app.router.match('GET', path)
    const first = (m: typeof match) => m[0][0]?.[0][0] === handler && Object.keys(m[0][0][1]).length === 0
    if (HTTP_METHODS.every((method) => first(method === 'GET' ? match : app.router.match(method, path)))) {
      table.set(path, { serve, match })
    }
  }
  return table
}
