import type { RouteKind, RuntimeApiRoute } from '../types.ts'

/** Spec "Limits": task retries default 0, per-attempt timeout default 30000 ms. */
export const DEFAULT_RETRIES = 0
export const DEFAULT_TIMEOUT_MS = 30_000

/**
 * The longest task timeout: setTimeout cannot wait longer than 2^31 − 1 ms
 * (about 24.8 days). The scanner and the runtime both hold config to it.
 */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1

/**
 * Dot-form task name of a route path: `/api/report` gives `report`,
 * `/api/jobs/notify` gives `jobs.notify` (spec "What the service does", item 6).
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
  origins: string[] | null
}

/**
 * Applies defaults to a runtime route. Fields the manifest already resolved
 * win; otherwise they are read from the module's `route` and `kind` exports
 * (`route.kind` wins over the `kind` shorthand), so hand-written
 * `{ path, module }` routes work too.
 */
export function resolveRoute(route: RuntimeApiRoute): ResolvedRoute {
  const mod = route.module ?? {}
  const config = mod.route ?? {}
  const kind: RouteKind = route.kind ?? config.kind ?? mod.kind ?? (mod.websocket ? 'hot' : 'serverless')
  return {
    path: route.path,
    kind,
    name: kind === 'task' ? (route.name ?? taskNameFromPath(route.path)) : null,
    retries: route.retries ?? config.retries ?? DEFAULT_RETRIES,
    timeout: route.timeout ?? config.timeout ?? DEFAULT_TIMEOUT_MS,
    schedule: route.schedule ?? config.schedule ?? mod.schedule ?? null,
    timezone: route.timezone ?? config.timezone ?? null,
    origins: route.origins !== undefined ? route.origins : (config.origins ?? null),
  }
}

/** Route kinds a file may declare (spec "Route configuration"). */
export const ROUTE_KINDS: readonly RouteKind[] = ['serverless', 'hot', 'task']

/** New HTTP endpoints and tasks run as class `function` with this memory (spec "Compute contract"). */
export const DEFAULT_FUNCTION_MEMORY = '1gb'

/**
 * The longest per-invocation timeout function platforms allow: 15 minutes,
 * the ceiling of the common function platforms. A task that needs longer
 * attempts belongs on a persistent host.
 */
export const FUNCTION_TIMEOUT_LIMIT_MS = 900_000

const MEMORY_SIZE = /^(\d+(?:\.\d+)?)\s*(mb|gb)$/i

/**
 * Megabytes of a memory size string (`'512mb'` gives 512, `'2gb'` gives
 * 2048, `'1.5gb'` gives 1536), or `null` when the string is not a size.
 * Sizes are binary: 1gb is 1024mb, as machine profiles count them.
 */
export function parseMemorySize(value: string): number | null {
  const match = MEMORY_SIZE.exec(value.trim())
  if (!match) return null
  const amount = Number(match[1]) * (match[2].toLowerCase() === 'gb' ? 1024 : 1)
  if (!Number.isFinite(amount) || amount <= 0 || !Number.isInteger(amount)) return null
  return amount
}
