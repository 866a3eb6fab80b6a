/**
 * Global hooks around HTTP requests:
 * - `onRequest(req)`, in order; the first to return a `Response` answers the
 *   request and the rest, and the handler, are skipped (auth, for example).
 * - `onError(error, req)`, in order, for anything a handler or an
 *   `onRequest` hook throws; the first to return a `Response` answers.
 * - `onResponse(req, res, { durationMs })`, in order, for every response,
 *   including 404s and errors; each may return a replacement the next sees.
 * `req` is the Web `Request`. Hooks do not run for the built-in endpoints
 * (`/__health`, `/__tasks*`, `/__svc/revalidate`), which have their own auth.
 */
import type { MiddlewareHandler } from 'hono'
import type { GlobalHooks, Logger } from '../types.ts'
import { describe } from '../describe.ts'
import { type ErrorResponder, internalError, knownErrorResponse } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { isAcceptedUpgrade } from './upgrade.ts'

export interface NormalizedHooks {
  onRequest: NonNullable<GlobalHooks['onRequest']>
  onError: NonNullable<GlobalHooks['onError']>
  onResponse: NonNullable<GlobalHooks['onResponse']>
}

const HOOK_NAMES = ['onRequest', 'onError', 'onResponse'] as const

/** Checks `globalHooks` once, at app creation, so a typo fails loudly. */
export function normalizeHooks(hooks: GlobalHooks | undefined, where: string): NormalizedHooks {
  const out: NormalizedHooks = { onRequest: [], onError: [], onResponse: [] }
  if (hooks === undefined || hooks === null) return out
  if (typeof hooks !== 'object') throw new TypeError(`${where}: globalHooks must be an object (got ${describe(hooks)})`)
  for (const key of Object.keys(hooks)) {
    if (!(HOOK_NAMES as readonly string[]).includes(key)) {
      throw new TypeError(`${where}: unknown hook "${key}" in globalHooks; use onRequest, onError or onResponse`)
    }
  }
  for (const name of HOOK_NAMES) {
    const list = hooks[name]
    if (list === undefined) continue
    if (!Array.isArray(list) || list.some((fn) => typeof fn !== 'function')) {
      throw new TypeError(`${where}: globalHooks.${name} must be an array of functions (got ${describe(list)})`)
    }
    ;(out[name] as unknown[]) = [...list]
  }
  return out
}

export function hasHooks(hooks: NormalizedHooks): boolean {
  return hooks.onRequest.length > 0 || hooks.onResponse.length > 0
}

/**
 * Turns anything thrown into a response: a thrown `Response` is sent as is,
 * then `onError` hooks, then the status an error carries (`SvcError`, a body
 * over the limit), else a logged 500 `INTERNAL_ERROR`.
 */
export function createErrorResponder(hooks: NormalizedHooks, R: ResponseClass, dev: boolean, logger: Logger): ErrorResponder {
  return async (error, at) => {
    if (error instanceof Response) return error
    const { raw: req, path } = 'raw' in at ? at : at.req
    for (const hook of hooks.onError) {
      try {
        const res = await hook(error, req)
        if (res instanceof Response) return res
      } catch (hookError) {
        logger.error(`[svc] onError hook failed for ${req.method} ${path}:`, hookError)
      }
    }
    const known = knownErrorResponse(R, error)
    if (known) return known
    // Hono's HTTPException carries its own response.
    const getResponse = (error as { getResponse?: () => Response } | null)?.getResponse
    if (typeof getResponse === 'function') return getResponse.call(error)
    logger.error(`[svc] ${req.method} ${path} failed:`, error)
    return internalError(R, error, dev)
  }
}

/** The middleware that runs `onRequest` and `onResponse` around the rest of the app. */
export function hooksMiddleware(hooks: NormalizedHooks, fail: ErrorResponder, logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now()
    const req = c.req.raw
    let early: Response | undefined
    try {
      for (const hook of hooks.onRequest) {
        const res = await hook(req)
        if (res instanceof Response) {
          early = res
          break
        }
      }
    } catch (error) {
      early = await fail(error, c)
    }
    if (early) c.res = early
    else await next()
    // An accepted WebSocket handshake is no longer an HTTP exchange.
    if (hooks.onResponse.length === 0 || isAcceptedUpgrade(req)) return
    let res = c.res
    const info = { durationMs: performance.now() - start }
    for (const hook of hooks.onResponse) {
      try {
        const replaced = await hook(req, res, info)
        if (replaced instanceof Response) res = replaced
      } catch (error) {
        logger.error(`[svc] onResponse hook failed for ${req.method} ${c.req.path}:`, error)
      }
    }
    if (res !== c.res) {
      // Clearing first makes Hono take the replacement as is instead of merging headers into it.
      c.res = undefined
      c.res = res
    }
  }
}
