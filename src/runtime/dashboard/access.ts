/**
 * Who is served the runs dashboard page. It follows the admin surface: in
 * development it is open to loopback peers, as `/__tasks` is without a
 * secret; anywhere else it is off until enabled (`dashboard: true`, or
 * `SVC_DASHBOARD=1`), and then the page holds no data until the user enters
 * the task secret, which the admin surface checks on every request.
 *
 * Open to loopback peers means to the developer's own requests, by the rule
 * of the admin surface without a secret (`admin/loopback.ts`): a loopback
 * `Host`, no `Origin` but a loopback one, `Sec-Fetch-Site` absent,
 * `same-origin` or `none` (typing the URL), and no proxy header
 * (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`, `Via`). A loopback request
 * that fails it (a link or frame on a page of another site or port, a
 * DNS-rebound name, a proxy on the same host) gets 403 saying which header.
 */
import { foreignRequestProblem, isLoopback } from '../admin/loopback.ts'
import { describe } from '../describe.ts'
import type { EnvLike } from '../env.ts'
import type { RequestInfo } from '../types.ts'

export const DASHBOARD_ENV = 'SVC_DASHBOARD'

export type DashboardAccess = 'everyone' | 'loopback' | 'off'

export function dashboardProblem(value: unknown): string | null {
  return value === undefined || typeof value === 'boolean' ? null : `dashboard must be a boolean (got ${describe(value)})`
}

/** The `dashboard` option wins; else `SVC_DASHBOARD=1` turns it on, and development opens it to loopback. */
export function dashboardAccess(option: boolean | undefined, env: EnvLike): DashboardAccess {
  if (option !== undefined) return option ? 'everyone' : 'off'
  const flag = env[DASHBOARD_ENV]
  if (flag === '1' || flag === 'true') return 'everyone'
  return env.NODE_ENV === 'development' ? 'loopback' : 'off'
}

/** Whether the page is served to this peer; a request it is not served to goes on to the app, which has no such route. */
export function servesDashboard(access: DashboardAccess, info: RequestInfo | undefined): boolean {
  return access === 'everyone' || (access === 'loopback' && isLoopback(info?.remoteAddress))
}

/** Where the page is open to loopback peers, why `request` may be another site's or a proxy's (a 403); else `undefined`. */
export function dashboardRefusal(access: DashboardAccess, request: Request): string | undefined {
  return access === 'loopback' ? foreignRequestProblem(request) : undefined
}
