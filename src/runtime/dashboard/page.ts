/**
 * The page svc ships, for the hosts that serve it. Only the Node server
 * imports this module, so edge and function bundles leave the page out.
 */
import { createDashboardHandler } from './handler.ts'
import { DASHBOARD_CSP, DASHBOARD_HTML } from './page.generated.ts'
import type { DashboardPage } from './route.ts'

export const DASHBOARD_PAGE: DashboardPage = {
  html: DASHBOARD_HTML,
  csp: DASHBOARD_CSP,
  createHandler: (options) => createDashboardHandler({ ...options, page: DASHBOARD_PAGE }),
}
