import type { RuntimeApiRoute } from './types/modules.ts'
import type { RouteConfig, RouteKind } from './types/routes.ts'
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
  const problem = unknownRouteFieldProblem(config) ?? taskOnlyProblem(mod, kind, route.path)
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

// Keyed by RouteConfig, so tsc fails when a field is added to one and not the other.
const ROUTE_FIELD_SET: Record<keyof RouteConfig, true> = {
  kind: true,
  compute: true,
  origins: true,
  retries: true,
  timeout: true,
  schedule: true,
  timezone: true,
  on: true,
  concurrency: true,
  rateLimit: true,
  debounce: true,
  priority: true,
  priorityAging: true,
  retention: true,
  maxDuration: true,
}

/** Every field of `route`. Any other is an error: a misspelled field would otherwise be a setting silently left out. */
export const ROUTE_FIELDS = Object.keys(ROUTE_FIELD_SET) as readonly (keyof RouteConfig)[]

/**
 * Why a `route` object handed over from code cannot be served, or null: its
 * first field that is not a route field (the scanner reports each one at its
 * line).
 */
function unknownRouteFieldProblem(config: unknown): string | null {
  if (typeof config !== 'object' || config === null) return null
  const name = Object.keys(config).find((key) => !Object.hasOwn(ROUTE_FIELD_SET, key))
  return name === undefined ? null : unknownFieldProblem('route', name, ROUTE_FIELDS)
}

/**
 * `<object>.<name> is not a <noun> field`, with the field the name is most
 * likely a misspelling of, or else the list of fields. `object` is the dotted
 * path of the config object (`route`, `route.compute`).
 */
export function unknownFieldProblem(object: string, name: string, fields: readonly string[]): string {
  const noun = object.slice(object.lastIndexOf('.') + 1)
  const guess = closestName(name, fields)
  const hint = guess === null ? `${noun} fields are ${fields.join(', ')}` : `did you mean "${guess}"?`
  return `${object}.${name} is not a ${noun} field; ${hint}`
}

/**
 * The name in `names` that `name` most likely misspells, or null: the
 * nearest by Damerau-Levenshtein distance (optimal string alignment: a
 * swap of two neighbours counts as one edit), at most 2 edits and fewer than
 * half the name's length, ignoring case; otherwise one that starts with the
 * name or that the name starts with (`prio`, `timeoutMs`), 3 characters or
 * more. A name far longer or shorter than a field is ruled out by its
 * length before any edit is counted, so the cost stays linear in the
 * name's length.
 */
export function closestName(name: string, names: readonly string[]): string | null {
  const typed = name.toLowerCase()
  const limit = Math.min(2, Math.ceil(typed.length / 2) - 1)
  let best: string | null = null
  let bestDistance = limit + 1
  for (const candidate of names) {
    const distance = editDistance(typed, candidate.toLowerCase(), bestDistance - 1)
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  if (best !== null || typed.length < 3) return best
  return (
    names.find((candidate) => {
      const known = candidate.toLowerCase()
      return known.startsWith(typed) || (known.length >= 3 && typed.startsWith(known))
    }) ?? null
  )
}

/**
 * Optimal string alignment distance between `a` and `b`, or `limit + 1` as
 * soon as it is known to exceed `limit`.
 */
function editDistance(a: string, b: string, limit: number): number {
  if (limit < 0 || Math.abs(a.length - b.length) > limit) return limit + 1
  // Three rows of the dynamic-programming table: two back, one back and this one.
  let before = new Array<number>(b.length + 1).fill(0)
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  let current = new Array<number>(b.length + 1).fill(0)
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let rowMin = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1)
      current[j] = d
      if (d < rowMin) rowMin = d
    }
    if (rowMin > limit) return limit + 1
    ;[before, previous, current] = [previous, current, before]
  }
  return Math.min(previous[b.length], limit + 1)
}

/** The first route that is a task, for a host built without the task part to refuse (handler-config.ts, src/node/no-tasks.ts). */
export function firstTaskRoute(routes: readonly RuntimeApiRoute[]): RuntimeApiRoute | undefined {
  return routes.find((route) => route !== null && typeof route === 'object' && resolveRoute(route).kind === 'task')
}
