/**
 * The route pattern of a request to the task admin surface (`tasks.ts`) or
 * to `/__events` (`send-events.ts`, `list-events.ts`), which names its
 * server span and is its `http.route` (docs/observability.md). A pattern
 * holds no task name, run id, token or event name: span names are few, as
 * the OpenTelemetry HTTP conventions ask, and ids and tokens stay out of
 * them. Edge-safe.
 */
import { trimTrailingSlashes } from '../http/path.ts'
import { EVENTS_PREFIX } from './send-events.ts'
import { TASKS_PREFIX } from './tasks.ts'

const RUN_ACTIONS = new Set(['cancel', 'replay', 'wake', 'logs', 'stream'])

/**
 * The pattern of `pathname` as the admin surface routes it for `method`
 * (`/__tasks/{name}` on POST, `/__tasks/{id}` on GET), or `undefined` for a
 * path that is neither `/__tasks` nor `/__events`, or that no endpoint
 * serves.
 */
export function adminRoutePattern(method: string, pathname: string): string | undefined {
  if (below(pathname, TASKS_PREFIX)) return tasksPattern(method, segmentsOf(pathname, TASKS_PREFIX))
  if (below(pathname, EVENTS_PREFIX)) {
    const segments = segmentsOf(pathname, EVENTS_PREFIX)
    if (segments.length === 0) return EVENTS_PREFIX
    // A send names the event, '/' and all (the rest of the path); a read names one by its id.
    if (method === 'POST') return `${EVENTS_PREFIX}/{name}`
    if (segments.length === 1) return `${EVENTS_PREFIX}/{id}`
  }
  return undefined
}

/** The patterns of `tasks.ts`, in the order it routes. */
function tasksPattern(method: string, segments: string[]): string | undefined {
  const isRead = method === 'GET' || method === 'HEAD'
  const [first, second, third] = segments
  switch (segments.length) {
    case 0:
      return TASKS_PREFIX
    case 1:
      // `POST /__tasks/runs` starts a task named `runs`; reads of the words are the surface's.
      if (isRead && (first === 'runs' || first === 'events')) return `${TASKS_PREFIX}/${first}`
      return method === 'POST' ? `${TASKS_PREFIX}/{name}` : `${TASKS_PREFIX}/{id}`
    case 2:
      if (first === 'tokens') return `${TASKS_PREFIX}/tokens/{id}`
      if (first === 'runs') return `${TASKS_PREFIX}/runs/{id}`
      if (second === 'stream' && first !== 'events') return `${TASKS_PREFIX}/{id}/stream`
      if (second === 'batch' || second === 'fire') return `${TASKS_PREFIX}/{name}/${second}`
      return undefined
    case 3:
      return first === 'runs' && RUN_ACTIONS.has(third) ? `${TASKS_PREFIX}/runs/{id}/${third}` : undefined
    default:
      return undefined
  }
}

function below(pathname: string, prefix: string): boolean {
  return pathname.startsWith(prefix) && (pathname.length === prefix.length || pathname.charCodeAt(prefix.length) === 47) /* / */
}

function segmentsOf(pathname: string, prefix: string): string[] {
  const rest = trimTrailingSlashes(pathname.slice(prefix.length))
  return rest === '' ? [] : rest.slice(1).split('/')
}
