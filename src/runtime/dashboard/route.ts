/**
 * Where the runs dashboard lives, and what a host that does not ship it
 * answers there. The page and its handler come together in `DASHBOARD_PAGE`
 * (`page.ts`), which only the servers that serve it import, so edge and
 * function bundles carry neither. Edge-safe.
 */
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import type { EnvLike } from '../env.ts'
import type { RequestInfo, TaskRuntime } from '../types.ts'
import type { DashboardAccess } from './access.ts'

export const DASHBOARD_PATH = '/__svc/dashboard'

/** Answers a dashboard path, or `undefined` where the page is not served (the request then goes on to the app, which has no such route). */
export type DashboardHandler = (request: Request, pathname: string, info?: RequestInfo) => Response | Promise<Response> | undefined

/** The page svc ships (`DASHBOARD_PAGE` from `svcjs/node`): its HTML, the Content-Security-Policy that allows its inline script and style, and its handler. */
export interface DashboardPage {
  html: string
  csp: string
  /** Serves the page and the task list it reads, to the requests `access` allows. */
  createHandler(options: { access: DashboardAccess; runtime: TaskRuntime; env: EnvLike; R: ResponseClass }): DashboardHandler
}

export function isDashboardPath(pathname: string): boolean {
  return pathname === DASHBOARD_PATH || pathname.startsWith(`${DASHBOARD_PATH}/`)
}

/** The answer of a host without the page: a 404 that says so, instead of an empty page. */
export function dashboardNotIncluded(R: ResponseClass): DashboardHandler {
  return () =>
    jsonError(
      R,
      404,
      'DASHBOARD_NOT_INCLUDED',
      'This host does not ship the dashboard page: svc dev and the node, bun and deno servers serve it',
    )
}
