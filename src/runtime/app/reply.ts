/**
 * `reply`: the second argument of route handlers. It keeps the status and
 * headers a handler sets and builds the response with the app's `Response`
 * constructor, so on Node responses take srvx's fast path.
 */
import type { ResponseClass } from '../http/types.ts'
import { GlobalResponse } from './global-response.ts'
import type { Reply } from './types.ts'

// Shared, never mutated: the common case (plain JSON, default status)
// allocates no header object per request. Headers as name-value pairs for a
// Response class the host gives (the Node server's is srvx's, which reads
// them as they are, where an object's would be listed with Object.entries
// on every answer); as an object for the global Response, which Bun's and
// Deno's servers build with: their constructors read a list of pairs in
// twice the time of an object.
const JSON_PAIRS_INIT: ResponseInit = Object.freeze({
  headers: Object.freeze([Object.freeze(['content-type', 'application/json'])]),
}) as ResponseInit
const JSON_OBJECT_INIT: ResponseInit = Object.freeze({
  headers: Object.freeze({ 'content-type': 'application/json' }),
}) as ResponseInit
const JSON_TYPE = 'application/json'
const TEXT_TYPE = 'text/plain; charset=utf-8'
const HTML_TYPE = 'text/html; charset=utf-8'

/** The init of a plain JSON answer built with `R`. */
export function jsonInitFor(R: ResponseClass): ResponseInit {
  return R === GlobalResponse ? JSON_OBJECT_INIT : JSON_PAIRS_INIT
}

export class ReplyImpl implements Reply {
  /** The last response built, sent when the handler returns nothing. */
  sent: Response | undefined
  #R: ResponseClass
  #jsonInit: ResponseInit
  #status: number | undefined
  #headers: [string, string][] | undefined

  /** `jsonInit`: `jsonInitFor(R)`, which a route works out once. */
  constructor(R: ResponseClass, jsonInit: ResponseInit = jsonInitFor(R)) {
    this.#R = R
    this.#jsonInit = jsonInit
  }

  status(code: number): this {
    if (!Number.isInteger(code) || code < 200 || code > 599) {
      throw new RangeError(`reply.status(code): code must be an integer from 200 to 599 (got ${String(code)})`)
    }
    this.#status = code
    return this
  }

  header(name: string, value: string): this {
    const lower = name.toLowerCase()
    const headers = (this.#headers ??= [])
    // Set-Cookie is the one header that repeats instead of joining (RFC 6265 §3).
    if (lower !== 'set-cookie') {
      for (let i = headers.length - 1; i >= 0; i--) if (headers[i][0] === lower) headers.splice(i, 1)
    }
    headers.push([lower, String(value)])
    return this
  }

  json(data: unknown, status?: number): Response {
    const body = JSON.stringify(data)
    // JSON.stringify(undefined) is undefined: send JSON null rather than an empty body.
    return this.#send(body === undefined ? 'null' : body, JSON_TYPE, status)
  }

  text(body: string, status?: number): Response {
    return this.#send(String(body), TEXT_TYPE, status)
  }

  html(body: string, status?: number): Response {
    return this.#send(String(body), HTML_TYPE, status)
  }

  redirect(url: string, status = 302): Response {
    if (!Number.isInteger(status) || status < 300 || status > 399) {
      throw new RangeError(`reply.redirect(url, status): status must be a 3xx code (got ${String(status)})`)
    }
    this.header('location', url)
    return this.#send(null, undefined, status)
  }

  /** The response for a handler's plain return value. */
  value(data: unknown): Response {
    return this.json(data)
  }

  /** What to send when the handler returned nothing. */
  empty(): Response {
    return this.sent ?? new this.#R(null, { status: 204, headers: this.#headers })
  }

  #send(body: string | null, type: string | undefined, status: number | undefined): Response {
    const code = status ?? this.#status
    // A body with 204, 205 or 304 makes the Response constructor throw (Fetch
    // standard, "null body status"); Node's server would only drop it.
    if (code === 204 || code === 205 || code === 304) {
      body = null
      type = undefined
    }
    let init: ResponseInit
    if (code === undefined && this.#headers === undefined && type === JSON_TYPE) {
      init = this.#jsonInit
    } else {
      const headers = this.#headers ? this.#headers.slice() : []
      if (type && !headers.some((h) => h[0] === 'content-type')) headers.push(['content-type', type])
      init = code === undefined ? { headers } : { status: code, headers }
    }
    const res = new this.#R(body, init)
    this.sent = res
    return res
  }
}
