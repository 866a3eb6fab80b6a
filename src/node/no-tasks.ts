/**
 * The task side of a server built for an app without tasks: no runtime, so
 * nothing to start, drain or close. What would need one is refused, naming
 * the fix: a run store or runtime given, or task routes arriving by reload.
 */
import type { RuntimeApiRoute } from '../types.ts'
import { firstTaskRoute } from '../runtime/route-config.ts'
import type { RuntimeLifecycle } from './lifecycle.ts'

const REBUILD = 'this server was built for an app without tasks; build the app again (svc build)'

export function noTaskLifecycle(
  options: { apiRoutes: RuntimeApiRoute[]; runtime?: unknown; store?: unknown },
  where: string,
): RuntimeLifecycle {
  if (options.runtime !== undefined || options.store !== undefined)
    throw new TypeError(`${where}: a run store or runtime is given, but ${REBUILD}`)
  refuseTasks(options.apiRoutes, where)
  return {
    runtime: undefined,
    async start() {},
    successor(routes) {
      refuseTasks(routes, 'reload()')
      return undefined
    },
    adopt() {},
    stopScheduler() {},
    async drain() {},
    async close() {},
  }
}

function refuseTasks(routes: RuntimeApiRoute[], where: string): void {
  const task = firstTaskRoute(routes)
  if (task) throw new TypeError(`${where}: route ${task.path} is a task, but ${REBUILD}`)
}
