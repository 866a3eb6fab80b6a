import type { RuntimeApiRoute } from './types/modules.ts'
import type { RouteKind } from './types/routes.ts'
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS } from './rules.ts'
import { taskOnlyProblem } from './task-only.ts'

/**
 * Dot-form task name of a route path: `/api/report` gives `report`,
 * `/api/jobs/notify` gives `jobs.notify`.
 */
export function taskNameFromPath(path: string): string {
  const rest = path.replace(/^\/api(?=\/|$)/, '').replace(/^\/+|\/+$/g, '')
  return rest.split('/').filter(Boolean).join('.')
}

/** The route config that the runtime acts on, with every default applied. */
export interface ResolvedRoute {
  path: string
  kind: RouteKind
  /** Dot-form name; set for tasks. */
  name: string | null
  retries: number
  timeout: number
  schedule: string | null
  timezone: string | null
  /** The `on` export or `route.on`, as written (a name or a list), unchecked. */
  on: unknown
  origins: string[] | null
}

/**
 * Applies defaults to a runtime route. Fields the manifest already resolved
 * win; otherwise they are read from the module's `route` and `kind` exports
 * (`route.kind` wins over the `kind` shorthand), so hand-written
 * `{ path, module }` routes work too.
 *
 * Throws for a route that is not a task but exports a `defineTask()` handler
 * or task config: served, it would run the task for any caller. Every
 * consumer of routes (the app, the task runtime) resolves them here at start,
 * so none serves such a route.
 */
export function resolveRoute(route: RuntimeApiRoute): ResolvedRoute {
  const mod = route.module ?? {}
  const config = mod.route ?? {}
  const kind: RouteKind = route.kind ?? config.kind ?? mod.kind ?? (mod.websocket ? 'hot' : 'serverless')
  const problem = taskOnlyProblem(mod, kind, route.path)
  if (problem) throw new TypeError(`Route ${route.path}: ${problem}`)
  return {
    path: route.path,
    kind,
    name: kind === 'task' ? (route.name ?? taskNameFromPath(route.path)) : null,
    retries: route.retries ?? config.retries ?? DEFAULT_RETRIES,
    timeout: route.timeout ?? config.timeout ?? DEFAULT_TIMEOUT_MS,
    schedule: route.schedule ?? config.schedule ?? mod.schedule ?? null,
    timezone: route.timezone ?? config.timezone ?? null,
    on: route.on ?? config.on ?? mod.on ?? null,
    origins: route.origins !== undefined ? route.origins : (config.origins ?? null),
  }
}

/** Route kinds a file may declare. */
export const ROUTE_KINDS: readonly RouteKind[] = ['serverless', 'hot', 'task']
