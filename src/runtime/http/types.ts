/**
 * The request and response types every part of the HTTP surface shares:
 * routes, pages, the admin surface and the hosts that pass a `Response`
 * constructor in.
 */
import type { HonoRequest } from 'hono'

/**
 * The request object route handlers, page renderers and `websocket()` get:
 * Hono's request. `param()`, `query()`, `header()`, `json()`, `text()`,
 * `raw` (the Web `Request`) and `valid(target)` for the values a route's
 * `schema` validated (`'json'`, `'query'`, `'param'`, `'header'`).
 */
// biome-ignore lint/suspicious/noExplicitAny: `valid(target)` returns what the route's own schema produced
export type SvcRequest = HonoRequest<string, any>

/** A `Response` constructor; `startSvcServer` passes srvx's `FastResponse`. */
export type ResponseClass = new (body?: BodyInit | null, init?: ResponseInit) => Response
