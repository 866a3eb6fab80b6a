/**
 * Who is served the runs dashboard page. It follows the admin surface: in
 * development it is open to loopback peers, as `/__tasks` is without a
 * secret; anywhere else it is off until enabled (`dashboard: true`, or
 * `SVC_DASHBOARD=1`), and then the page holds no data until the user enters
 * the task secret, which the admin surface checks on every request.
 */
import { isLoopback } from '../admin/auth.ts'
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

export function servesDashboard(access: DashboardAccess, info: RequestInfo | undefined): boolean {
  return access === 'everyone' || (access === 'loopback' && isLoopback(info?.remoteAddress))
}
