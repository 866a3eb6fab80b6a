/**
 * The parts of svc a long-lived server carries (Node's, Bun's and Deno's):
 * task runs, with their lifecycle, admin surface, event streams and the runs
 * dashboard, and pages. `startSvcServer` and `startWebServer` take every
 * part; `svc build` writes a server that takes only those its app uses, so
 * a server of routes opens no run store, writes no `.svc/` and loads no task
 * engine.
 */
import type { EventStreams } from '../runtime/admin/streams.ts'
import { EVENT_STREAMS } from '../runtime/admin/event-streams.ts'
import { DASHBOARD_PAGE } from '../runtime/dashboard/page.ts'
import type { DashboardPage } from '../runtime/dashboard/route.ts'
import { PAGES, type PagesPart } from '../runtime/pages/part.ts'
import { TASK_SURFACE, type TaskSurfacePart } from '../runtime/task-surface.ts'
import { createRuntimeLifecycle } from './lifecycle.ts'
import { storeFromEnv } from './store-url.ts'

export interface ServerParts {
  tasks?: ServerTasks
  pages?: PagesPart
}

/** Task runs on a server. */
export interface ServerTasks {
  /** The runtime's life in the server: start, reload, drain and close. */
  lifecycle: typeof createRuntimeLifecycle
  /** `/__tasks*`, `/__events*` and the dashboard's paths. */
  surface: TaskSurfacePart
  streams: EventStreams
  dashboard: DashboardPage
  /** Opens the store `SVC_STORE_URL` names. */
  storeFromEnv: typeof storeFromEnv
}

export const SERVER_TASKS: ServerTasks = {
  lifecycle: createRuntimeLifecycle,
  surface: TASK_SURFACE,
  streams: EVENT_STREAMS,
  dashboard: DASHBOARD_PAGE,
  storeFromEnv,
}

/** Every part: what a server started from code takes. */
export const SERVER_PARTS: ServerParts = { tasks: SERVER_TASKS, pages: PAGES }

export { PAGES }
