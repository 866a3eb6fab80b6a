/**
 * The task side of a handler: its task runtime, and the paths that drive it
 * (`/__tasks*`, `/__events*` and the runs dashboard). A handler takes it as
 * a part (`HostParts.tasks`), so that an app without tasks (a worker of
 * routes, a built server of routes) carries no engine, store or admin
 * surface, and opens nothing. Edge-safe.
 */
import { checkRunEvents } from './admin/streams.ts'
import { createAdminHandler, TASKS_PREFIX } from './admin/tasks.ts'
import { adminRoutePattern } from './admin/route-pattern.ts'
import { createSendEventsHandler, isEventsPath } from './admin/send-events.ts'
import { createListEventsHandler, isEventListing } from './admin/list-events.ts'
import { dashboardAccess, dashboardProblem } from './dashboard/access.ts'
import { dashboardNotIncluded, isDashboardPath } from './dashboard/route.ts'
import { describe } from './describe.ts'
import { createCoreRuntime, withMemoryStore } from './tasks/runtime.ts'
import type { TaskRuntime } from './types.ts'
import type { HandlerConfig, TaskOptions } from './handler-options.ts'
import { checkMaxPayloadBytes } from './tasks/store/payload-limit.ts'
import type { TaskSurfacePart } from './handler-options.ts'

export type { TaskSurface, TaskSurfaceContext, TaskSurfacePart } from './handler-options.ts'

/** The task runtime (the given one, or one in memory), its admin surface, event sends and listings, and the dashboard. */
export const TASK_SURFACE: TaskSurfacePart = /* @__PURE__ */ taskSurface((config) =>
  // A runtime of its own keeps its runs in memory, which no other process shares.
  createCoreRuntime(
    withMemoryStore({
      routes: config.routes,
      env: config.env,
      logger: config.logger,
      cron: config.tasks.cron,
      maxPayloadBytes: config.tasks.maxPayloadBytes,
      events: config.tasks.events,
      telemetry: config.telemetry,
    }),
  ),
)

/**
 * The task surface of a host that always gives the runtime (a worker's,
 * over its tasks objects): it makes none of its own, so its bundle leaves
 * the memory store out. `ownRuntime` makes one for the hosts given none.
 */
export function taskSurface(ownRuntime?: (config: HandlerConfig & { tasks: TaskOptions }) => TaskRuntime): TaskSurfacePart {
  return {
    resolve(options, where) {
      checkRunEvents(options.runEvents, where)
      const dashboard = dashboardProblem(options.dashboard)
      if (dashboard) throw new TypeError(`${where}: ${dashboard}`)
      if (options.holdRuns !== undefined && typeof options.holdRuns !== 'boolean') {
        throw new TypeError(`${where}: holdRuns must be a boolean (got ${describe(options.holdRuns)})`)
      }
      const runtime = options.runtime
      if (runtime !== undefined && (typeof runtime?.trigger !== 'function' || typeof runtime.getRun !== 'function')) {
        throw new TypeError(`${where}: runtime must be a TaskRuntime, such as createTaskRuntime() returns (got ${describe(runtime)})`)
      }
      if (runtime === undefined && !ownRuntime) {
        throw new TypeError(
          `${where}: this host's task part drives the runtime it is given and makes none: pass runtime (createTaskRuntime())`,
        )
      }
      return {
        runtime,
        events: options.events,
        cron: options.cron,
        maxPayloadBytes: checkMaxPayloadBytes(options.maxPayloadBytes, where),
        holdRuns: options.holdRuns ?? true,
        runEvents: options.runEvents,
        dashboard: options.dashboard,
        dashboardPage: options.dashboardPage,
      }
    },

    create(config, ctx) {
      const { env, logger, R, dev, tasks } = config
      const { loopback, spanOf } = ctx
      // resolve() made sure of one or the other.
      const runtime = tasks.runtime ?? ownRuntime!(config)
      // A trigger's body is its input: the admin surface reads as much as a run may hold.
      const bodyLimit = config.givenBodyLimit ?? Math.max(config.bodyLimit, runtime.maxPayloadBytes ?? 0)
      const admin = createAdminHandler({
        runtime,
        env,
        bodyLimit,
        R,
        logger,
        dev,
        holdRuns: tasks.holdRuns,
        runEvents: tasks.runEvents,
        streams: ctx.streams,
        loopback,
        traceOf: spanOf && ((request) => spanOf(request)?.trace()),
      })
      const sendEvents = createSendEventsHandler({ runtime, env, bodyLimit, R, logger, dev, loopback })
      const listEvents = createListEventsHandler({ runtime, env, R, logger, dev, loopback })
      const dashboard = tasks.dashboardPage
        ? tasks.dashboardPage.createHandler({ access: dashboardAccess(tasks.dashboard, env), runtime, env, R })
        : dashboardNotIncluded(R)
      return {
        runtime,
        serve(request, pathname, info) {
          // Admin spans are named by pattern (`POST /__tasks/{name}`), as routes' spans are.
          const pattern = spanOf && adminRoutePattern(request.method, pathname)
          if (pattern) spanOf(request)?.route(pattern)
          if (isTasksPath(pathname)) return admin(request, pathname, info)
          if (isEventsPath(pathname)) {
            return isEventListing(request, pathname) ? listEvents(request, pathname, info) : sendEvents(request, pathname, info)
          }
          return isDashboardPath(pathname) ? dashboard(request, pathname, info) : undefined
        },
      }
    },
  }
}

/** `/__tasks` and the paths under it. */
export function isTasksPath(pathname: string): boolean {
  return pathname.startsWith(TASKS_PREFIX) && (pathname.length === TASKS_PREFIX.length || pathname.charCodeAt(TASKS_PREFIX.length) === 47)
}
