/**
 * `/__svc/dashboard`: the runs dashboard page, and `/__svc/dashboard/tasks`,
 * the task list it shows (the admin summaries with next ticks), behind the
 * admin auth. The page itself is a static shell with no data in it; it reads
 * everything from the admin surface with the user's credentials. Edge-safe.
 */
import { authorize } from '../admin/auth.ts'
import { jsonError, methodNotAllowed } from '../app/errors.ts'
import type { ResponseClass } from '../app/types.ts'
import type { EnvLike } from '../env.ts'
import type { RequestInfo, TaskRuntime } from '../types.ts'
import { type DashboardAccess, servesDashboard } from './access.ts'
import { DASHBOARD_CSP, DASHBOARD_HTML } from './page.generated.ts'
import { dashboardTasks } from './tasks.ts'

export const DASHBOARD_PATH = '/__svc/dashboard'

export interface DashboardOptions {
  access: DashboardAccess
  runtime: TaskRuntime
  env: EnvLike
  R: ResponseClass
}

/** Answers a dashboard path, or `undefined` where the page is not served (the request then goes on to the app, which has no such route). */
export type DashboardHandler = (request: Request, pathname: string, info?: RequestInfo) => Response | Promise<Response> | undefined

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DASHBOARD_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
}

export function isDashboardPath(pathname: string): boolean {
  return pathname === DASHBOARD_PATH || pathname.startsWith(`${DASHBOARD_PATH}/`)
}

export function createDashboardHandler(options: DashboardOptions): DashboardHandler {
  const { access, runtime, env, R } = options
  return (request, pathname, info) => {
    if (!servesDashboard(access, info)) return undefined
    const method = request.method
    const path = pathname.replace(/\/+$/, '') || '/'
    if (path === DASHBOARD_PATH) {
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      return new R(method === 'HEAD' ? null : DASHBOARD_HTML, { status: 200, headers: PAGE_HEADERS })
    }
    if (path === `${DASHBOARD_PATH}/tasks`) {
      const denied = authorize(request, info, env, R)
      if (denied) return denied
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      return dashboardTasks(runtime).then(
        (tasks) => new R(JSON.stringify({ tasks }), { status: 200, headers: { 'content-type': 'application/json' } }),
      )
    }
    return jsonError(R, 404, 'NOT_FOUND', `No dashboard resource at ${pathname}; the page is ${DASHBOARD_PATH}`)
  }
}
