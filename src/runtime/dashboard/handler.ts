/**
 * `/__svc/dashboard`: the runs dashboard page, and `/__svc/dashboard/tasks`,
 * the task list it shows (the admin summaries with next ticks), behind the
 * admin auth. The page itself is a static shell with no data in it; it reads
 * everything from the admin surface with the user's credentials. Edge-safe.
 */
import { authorize } from '../admin/auth.ts'
import { unsupportedContent } from '../admin/content-type.ts'
import { loopbackExemption } from '../admin/loopback-exemption.ts'
import { jsonError, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { trimTrailingSlashes } from '../http/path.ts'
import type { EnvLike } from '../env.ts'
import type { TaskRuntime } from '../types.ts'
import { DASHBOARD_ENV, type DashboardAccess, dashboardRefusal, servesDashboard } from './access.ts'
import { dashboardTasks } from './tasks.ts'

import { DASHBOARD_PATH, type DashboardHandler, type DashboardPage } from './route.ts'

export interface DashboardOptions {
  access: DashboardAccess
  page: DashboardPage
  runtime: TaskRuntime
  env: EnvLike
  R: ResponseClass
}

const pageHeaders = (page: DashboardPage) => ({
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': page.csp,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
})

export function createDashboardHandler(options: DashboardOptions): DashboardHandler {
  const { access, page, runtime, env, R } = options
  const headers = pageHeaders(page)
  return (request, pathname, info) => {
    if (!servesDashboard(access, info)) return undefined
    const refusal = dashboardRefusal(access, request)
    if (refusal !== undefined) {
      return jsonError(
        R,
        403,
        'FORBIDDEN',
        `${refusal}. In development the dashboard is served to requests made on this machine by no other site and through no proxy; to serve it elsewhere, set ${DASHBOARD_ENV}=1, and the page then asks for the task secret, SVC_TASK_SECRET`,
      )
    }
    const unsupported = unsupportedContent(request, R)
    if (unsupported) return unsupported
    const method = request.method
    const path = trimTrailingSlashes(pathname) || '/'
    if (path === DASHBOARD_PATH) {
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      return new R(method === 'HEAD' ? null : page.html, { status: 200, headers })
    }
    if (path === `${DASHBOARD_PATH}/tasks`) {
      // Only servers import the page, so it brings the development exemption along.
      const denied = authorize(request, info, env, R, loopbackExemption)
      if (denied) return denied
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      return dashboardTasks(runtime).then(
        (tasks) => new R(JSON.stringify({ tasks }), { status: 200, headers: { 'content-type': 'application/json' } }),
      )
    }
    return jsonError(R, 404, 'NOT_FOUND', `No dashboard resource at ${pathname}; the page is ${DASHBOARD_PATH}`)
  }
}
