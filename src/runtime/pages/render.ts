/**
 * Server and hybrid pages (only these render at request time; static and client pages are files in `staticDirs`). A page
 * module's default export renders: `(req) => string | Response`.
 */
import type { Context, Hono } from 'hono'
import type { PageMode, RequestInfo, RuntimePage } from '../types.ts'
import { type ErrorResponder, methodNotAllowed } from '../http/errors.ts'
import { toHonoPath } from '../http/path.ts'
import type { ResponseClass, SvcRequest } from '../http/types.ts'
import { describe } from '../describe.ts'
import type { IsrCache, PageCacheInfo, Rendered } from './isr.ts'

const MODES: readonly PageMode[] = ['static', 'client', 'server', 'hybrid']
const HTML_HEADERS = { 'content-type': 'text/html; charset=utf-8' }
/**
 * A server page is rendered for one request and may hold what only that
 * visitor should see. Without a directive a shared cache may store a 200
 * and serve it to others (RFC 9111 §4.2.2, heuristic freshness); `no-store`
 * forbids storing it at all (RFC 9111 §5.2.2.5). A page that sets its own
 * Cache-Control keeps it.
 */
const NO_STORE = 'no-store'
const SERVER_HTML_HEADERS = { ...HTML_HEADERS, 'cache-control': NO_STORE }

export interface PageMountContext {
  R: ResponseClass
  fail: ErrorResponder
  cache: IsrCache | undefined
}

type Render = (req: SvcRequest) => Rendered | Promise<Rendered>

/** A server or hybrid page, checked and ready to mount. */
export interface PagePlan {
  path: string
  mode: 'server' | 'hybrid'
  render: Render
  /** A hybrid page served through the ISR cache. */
  cached: boolean
  info: PageCacheInfo
}

/** A page's effective settings: manifest fields win over the module's `page` export. */
export function resolvePage(page: RuntimePage): { mode: PageMode; revalidate: number | null; tags: string[] } {
  const config = page.module.page ?? {}
  return {
    mode: page.mode ?? config.mode ?? 'server',
    revalidate: page.revalidate ?? config.revalidate ?? null,
    tags: page.tags ?? config.tags ?? [],
  }
}

/**
 * Checks every page and keeps those that render at request time. Done
 * before anything is mounted: whether a hybrid page uses the cache decides
 * whether the revalidate endpoint exists.
 */
export function planPages(
  pages: readonly RuntimePage[],
  hasCache: boolean,
  logger: { warn(...args: unknown[]): void },
  where: string,
): PagePlan[] {
  const plans: PagePlan[] = []
  let warned = false
  pages.forEach((page, index) => {
    if (page === null || typeof page !== 'object' || typeof page.path !== 'string' || !page.path.startsWith('/')) {
      throw new TypeError(`${where}: pages[${index}] must be an object with a path starting with "/" and a module (got ${describe(page)})`)
    }
    const settings = resolvePage(page)
    if (!MODES.includes(settings.mode)) {
      throw new TypeError(`${where}: page ${page.path}: mode must be one of ${MODES.join(', ')} (got ${describe(settings.mode)})`)
    }
    if (settings.mode === 'static' || settings.mode === 'client') return
    const render = page.module?.default
    if (typeof render !== 'function') {
      throw new TypeError(`${where}: page ${page.path}: the default export must be a render function (got ${describe(render)})`)
    }
    if (settings.revalidate !== null && (typeof settings.revalidate !== 'number' || !(settings.revalidate >= 0))) {
      throw new TypeError(`${where}: page ${page.path}: revalidate must be a number of seconds (got ${describe(settings.revalidate)})`)
    }
    if (settings.mode === 'hybrid' && !hasCache && !warned) {
      warned = true
      logger.warn(`[svc] hybrid pages render on every request: no ISR cache is configured (set cache: { store: 'memory' })`)
    }
    plans.push({
      path: page.path,
      mode: settings.mode,
      render: render as Render,
      cached: settings.mode === 'hybrid' && hasCache,
      info: { path: page.path, revalidate: settings.revalidate, tags: settings.tags },
    })
  })
  return plans
}

export function mountPages(app: Hono, plans: readonly PagePlan[], ctx: PageMountContext): void {
  for (const plan of plans) {
    app.all(toHonoPath(plan.path), pageHandler(plan, plan.cached ? ctx.cache : undefined, ctx))
  }
}

function pageHandler(plan: PagePlan, cache: IsrCache | undefined, ctx: PageMountContext) {
  const { path, render, info } = plan
  const { R, fail } = ctx
  const server = plan.mode === 'server'
  const renderIn = async (c: Context): Promise<Rendered> => {
    const out = await render(c.req)
    if (typeof out === 'string' || out instanceof Response) return out
    throw new TypeError(`page ${path}: the default export must return a string or a Response (got ${describe(out)})`)
  }
  return async (c: Context): Promise<Response> => {
    const method = c.req.raw.method
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, c.req.path, 'GET, HEAD')
    try {
      if (cache) {
        const url = c.req.url
        const start = url.indexOf('/', url.indexOf('//') + 2)
        const key = start === -1 ? '/' : url.slice(start).split('#', 1)[0]
        const waitUntil = (c.env as RequestInfo | undefined)?.waitUntil
        return await cache.serve(key, info, () => renderIn(c), R, waitUntil)
      }
      const out = await renderIn(c)
      if (typeof out === 'string') return new R(out, { headers: server ? SERVER_HTML_HEADERS : HTML_HEADERS })
      return server ? noStore(out, R) : out
    } catch (error) {
      return fail(error, c)
    }
  }
}

/** The page's own Response, with `Cache-Control: no-store` unless it set a Cache-Control. */
function noStore(res: Response, R: ResponseClass): Response {
  if (res.headers.has('cache-control')) return res
  try {
    res.headers.set('cache-control', NO_STORE)
    return res
  } catch {
    // Headers are immutable on some responses (Response.redirect(), a
    // fetch() answer; Fetch "headers guard"): send a copy instead.
    const headers = new Headers(res.headers)
    headers.set('cache-control', NO_STORE)
    return new R(res.body, { status: res.status, statusText: res.statusText, headers })
  }
}
