/**
 * Mounts API routes on a Hono app: one `all` route per file, whose handler
 * picks the method export, so a method the file does not export gets 405
 * with `Allow` (RFC 9110 §15.5.6) rather than a 404. Task routes are
 * skipped: they are not HTTP endpoints.
 */
import type { Context, Hono } from 'hono'
import { HTTP_METHODS, type HttpMethod, type RuntimeApiRoute, type SchemaDefinition } from '../types.ts'
import { isOriginAllowed } from '../origins.ts'
import { resolveRoute } from '../route-config.ts'
import { isSchemaDefinition, isStandardSchema } from '../schema.ts'
import { describe } from '../describe.ts'
import { type ErrorResponder, jsonError, methodNotAllowed } from '../http/errors.ts'
import { toHonoPath } from '../http/path.ts'
import type { ResponseClass, SvcRequest } from '../http/types.ts'
import { jsonInitFor, ReplyImpl } from './reply.ts'
import type { RouteHandler, WebSocketHandler } from './types.ts'
import { acceptUpgrade, canUpgrade, isWebSocketUpgrade } from './upgrade.ts'
import { validateRequest } from './validation.ts'

export interface MountContext {
  R: ResponseClass
  fail: ErrorResponder
  bodyLimit: number
  /** Told of the route pattern that answers each request (telemetry's `http.route`). */
  noteRoute?: (request: Request, pattern: string) => void
}

/** Checks a route entry; bad ones fail at startup with the route named. */
export function checkRoute(route: RuntimeApiRoute, index: number, where: string): void {
  if (route === null || typeof route !== 'object') {
    throw new TypeError(`${where}: routes[${index}] must be an object with path and module (got ${describe(route)})`)
  }
  if (typeof route.path !== 'string' || !route.path.startsWith('/')) {
    throw new TypeError(`${where}: routes[${index}].path must be a URL path starting with "/" (got ${describe(route.path)})`)
  }
  if (route.module === null || typeof route.module !== 'object') {
    throw new TypeError(`${where}: route ${route.path}: module must be the loaded module exports (got ${describe(route.module)})`)
  }
}

/** A mounted route: the handler Hono runs, and the same answer from Hono's request alone. */
export interface MountedRoute {
  /** The route's URL pattern, as the manifest writes it. */
  path: string
  handler: (c: Context) => Response | Promise<Response>
  serve: RouteServe
}

/**
 * Answers a request to one route; `req` carries the request, its routing
 * path and parameters. `method` is the request's, when the caller has read
 * it already: on Bun each read of `request.method` is a call into the runtime.
 */
export type RouteServe = (req: SvcRequest, method?: string) => Response | Promise<Response>

export function mountRoutes(app: Hono, routes: readonly RuntimeApiRoute[], ctx: MountContext, where: string): MountedRoute[] {
  const mounted: MountedRoute[] = []
  routes.forEach((route, index) => {
    checkRoute(route, index, where)
    const resolved = resolveRoute(route)
    if (resolved.kind === 'task') return
    const mod = route.module
    const handlers: Partial<Record<HttpMethod, RouteHandler>> = {}
    for (const method of HTTP_METHODS) {
      const fn = mod[method]
      if (fn === undefined) continue
      if (typeof fn !== 'function') {
        throw new TypeError(`${where}: route ${route.path}: the ${method} export must be a function (got ${describe(fn)})`)
      }
      handlers[method] = fn as RouteHandler
    }
    const websocket = mod.websocket
    if (websocket !== undefined && typeof websocket !== 'function') {
      throw new TypeError(`${where}: route ${route.path}: the websocket export must be a function (got ${describe(websocket)})`)
    }
    const schema = readSchema(route, where)
    const routed = routeHandler(route.path, handlers, websocket as WebSocketHandler | undefined, resolved.origins, schema, ctx)
    const note = ctx.noteRoute
    const serve: RouteServe =
      note === undefined
        ? routed
        : (req, method) => {
            note(req.raw, route.path)
            return routed(req, method)
          }
    const handler = (c: Context) => serve(c.req)
    app.all(toHonoPath(route.path), handler)
    mounted.push({ path: route.path, handler, serve })
  })
  return mounted
}

function readSchema(route: RuntimeApiRoute, where: string): SchemaDefinition | undefined {
  const schema = route.module.schema
  if (schema === undefined) return undefined
  if (isSchemaDefinition(schema)) return schema
  const hint = isStandardSchema(schema) ? '; wrap it: defineSchema({ body: schema })' : ''
  throw new TypeError(`${where}: route ${route.path}: the schema export must be a defineSchema() object${hint}`)
}

/** `Allow` lists HEAD wherever GET is served (RFC 9110 §9.3.2). */
function allowHeader(handlers: Partial<Record<HttpMethod, RouteHandler>>, websocket: boolean): string {
  const methods = HTTP_METHODS.filter((m) => handlers[m] !== undefined)
  if ((handlers.GET || websocket) && !methods.includes('GET')) methods.unshift('GET')
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.splice(methods.indexOf('GET') + 1, 0, 'HEAD')
  return methods.join(', ')
}

function routeHandler(
  path: string,
  handlers: Partial<Record<HttpMethod, RouteHandler>>,
  websocket: WebSocketHandler | undefined,
  origins: string[] | null,
  schema: SchemaDefinition | undefined,
  ctx: MountContext,
): RouteServe {
  const { R, fail, bodyLimit } = ctx
  const allow = allowHeader(handlers, websocket !== undefined)
  const jsonInit = jsonInitFor(R)

  const invoke = (fn: RouteHandler, req: SvcRequest): Response | Promise<Response> => {
    const reply = new ReplyImpl(R, jsonInit)
    let out: unknown
    try {
      out = fn(req, reply)
    } catch (error) {
      return fail(error, req)
    }
    if (out instanceof Promise) {
      return out.then(
        (value) => toResponse(value, reply),
        (error) => fail(error, req),
      )
    }
    return toResponse(out, reply)
  }

  const validated = (fn: RouteHandler, req: SvcRequest): Promise<Response> =>
    validateRequest(req, schema!, bodyLimit).then(
      () => invoke(fn, req),
      (error) => fail(error, req),
    )

  return (req, known) => {
    const request = req.raw
    const method = (known ?? request.method) as HttpMethod
    if (websocket !== undefined && method === 'GET' && isWebSocketUpgrade(request)) {
      const refused = refuseOrigin(request, path, origins, R)
      if (refused) return refused
      // The handshake is websocket()'s request: its params, query and headers
      // are validated like any handler's, before the upgrade (no body on GET).
      if (!schema) return handshake(req, path, websocket, R)
      return validateRequest(req, schema, bodyLimit).then(
        () => handshake(req, path, websocket, R),
        (error) => fail(error, req),
      )
    }
    // Hono routes HEAD as GET and drops the body; an explicit HEAD export wins.
    const fn = handlers[method] ?? (method === 'HEAD' ? handlers.GET : undefined)
    if (fn === undefined) {
      if (websocket !== undefined && (method === 'GET' || method === 'HEAD')) {
        // RFC 9110 §15.5.22: the resource exists but only speaks WebSocket.
        return jsonError(R, 426, 'UPGRADE_REQUIRED', `${path} only accepts WebSocket connections`, {
          upgrade: 'websocket',
          connection: 'Upgrade',
        })
      }
      return methodNotAllowed(R, method, req.path, allow)
    }
    return schema ? validated(fn, req) : invoke(fn, req)
  }
}

function toResponse(value: unknown, reply: ReplyImpl): Response {
  if (value instanceof Response) return value
  if (value === undefined) return reply.empty()
  return reply.value(value)
}

/** An Origin off the list is refused with 403 before the handshake. */
function refuseOrigin(request: Request, path: string, origins: string[] | null, R: ResponseClass): Response | undefined {
  const origin = request.headers.get('origin')
  if (isOriginAllowed(origin, origins)) return undefined
  return jsonError(R, 403, 'ORIGIN_NOT_ALLOWED', `Origin ${origin} may not open a WebSocket on ${path}; add it to route.origins`)
}

function handshake(req: SvcRequest, path: string, websocket: WebSocketHandler, R: ResponseClass): Response {
  const request = req.raw
  if (!canUpgrade(request)) {
    return jsonError(R, 426, 'UPGRADE_REQUIRED', `${path} is a hot route; WebSockets need a persistent host such as startSvcServer`)
  }
  acceptUpgrade(request, { websocket, req, route: path })
  // The host completes the handshake; this response is never sent.
  return new R(null, { status: 204 })
}
