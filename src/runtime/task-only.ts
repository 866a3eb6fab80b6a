/**
 * What only a task reads, and the rule that a route of another kind declares
 * none of it. A task file without `kind: 'task'` would otherwise be a
 * serverless route, whose POST runs the task's handler for any caller,
 * without the task secret (docs/routes.md "Task code needs"). The scanner
 * reports such a file at `file:line:col`; the runtime refuses, at start, a
 * route handed to it from code on the same rule, so a module the scanner
 * never read cannot slip through. Edge-safe.
 */
import { HTTP_METHODS } from './http-methods.ts'
import { isTaskHandler } from './tasks/definitions/define-task.ts'
import type { RouteModule } from './types/modules.ts'
import type { RouteKind } from './types/routes.ts'

/** Fields of `route` that only a task reads. */
export const TASK_ROUTE_FIELDS = [
  'retries',
  'timeout',
  'schedule',
  'timezone',
  'on',
  'concurrency',
  'rateLimit',
  'debounce',
  'priority',
  'priorityAging',
  'retention',
  'maxDuration',
] as const

/** Top-level exports that only a task reads. */
export const TASK_EXPORTS = ['schedule', 'on', 'input'] as const

/** The line that makes a route file a task. */
export const TASK_ROUTE_EXPORT = "export const route = { kind: 'task' }"

/**
 * Why a route module whose resolved kind is `kind` cannot be served, or null:
 * a route that is not a task may neither export a `defineTask()` handler nor
 * declare task config. `path` is the route's URL path.
 */
export function taskOnlyProblem(mod: RouteModule, kind: RouteKind, path: string): string | null {
  if (kind === 'task') return null
  const fix = `make it a task with \`${TASK_ROUTE_EXPORT}\` in its module (or kind: 'task' on the route entry)`
  for (const method of HTTP_METHODS) {
    if (isTaskHandler(mod[method])) {
      return `its ${method} export is a defineTask() handler, but the route is ${kind}: ${method} ${path} would run the task for any caller, without the task secret; ${fix}`
    }
  }
  const config = (typeof mod.route === 'object' && mod.route !== null ? mod.route : {}) as Record<string, unknown>
  const field = TASK_ROUTE_FIELDS.find((name) => config[name] !== undefined)
  if (field !== undefined) return `route.${field} applies to tasks only, but the route is ${kind}; ${fix}, or remove route.${field}`
  const exported = TASK_EXPORTS.find((name) => mod[name] !== undefined)
  if (exported !== undefined) {
    return `the ${exported} export applies to tasks only, but the route is ${kind}; ${fix}, or remove the ${exported} export`
  }
  return null
}
