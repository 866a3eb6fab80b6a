/**
 * Reads a route file's deployment config from its exports: `route`, the
 * `kind` shorthand, `schedule` and `on`, all static literals (docs/routes.md
 * "Route config"). Defaults are applied here; the result is what the
 * manifest reports.
 */
import { cronerClock } from '../runtime/tasks/schedule/croner-clock.ts'
import type { RouteKind } from '../runtime/types.ts'
import type { ResolvedCompute } from './types.ts'
import { ROUTE_FIELDS, ROUTE_KINDS, unknownFieldProblem } from '../runtime/route-config.ts'
import { normalizeOrigin } from '../runtime/origins.ts'
import {
  concurrencyProblem,
  debounceProblem,
  DEFAULT_RETRIES,
  DEFAULT_TIMEOUT_MS,
  normalizeCron,
  priorityAgingProblem,
  maxDurationProblem,
  rateLimitProblem,
  retentionProblem,
  retriesProblem,
  scheduleProblem,
  timeoutProblem,
  timezoneProblem,
} from '../runtime/rules.ts'
import { type TaskFlow, taskFlow } from '../runtime/tasks/flow/flow.ts'
import { priorityProblem } from '../runtime/tasks/definitions/options.ts'
import { normalizeCompute } from './compute.ts'
import { type StaticProperty, type StaticValue, readExportLiteral, snippet } from './literal.ts'
import type { ExportEntry, ModuleExports } from './module-exports.ts'
import type { Reporter } from './reporter.ts'
import { readEventTriggers } from './event-triggers.ts'
import { type KindSource, type NotATask, notATask, reportTaskConfig } from './not-a-task.ts'

/** The flow-control fields of a task route, each with its rule (docs/flow-control.md). */
const FLOW_FIELDS = [
  ['concurrency', concurrencyProblem],
  ['rateLimit', rateLimitProblem],
  ['debounce', debounceProblem],
  ['priorityAging', priorityAgingProblem],
] as const

export interface RouteConfigResult {
  kind: RouteKind
  /** How the kind was decided, for the manifest's `reasons`. */
  kindReason: string
  /** Whether `route.kind` explicitly says `serverless`. */
  explicitServerless: boolean
  /**
   * For a route that is not a task, why and how to make it one, for the
   * errors about task code in it; null for a task, and for a route whose
   * kind could not be read (that error is reported already).
   */
  notATask: NotATask | null
  retries: number | null
  timeout: number | null
  schedule: string | null
  timezone: string | null
  /** Tasks only: the events that start a run (`on` or `route.on`), as a list; null when none. */
  on: string[] | null
  origins: string[] | null
  compute: ResolvedCompute
  /** Whether the file declared `route.compute` at all. */
  computeDeclared: boolean
  /** Tasks only: `route.concurrency`, `route.rateLimit`, `route.debounce` and `route.priorityAging`, resolved; null otherwise. */
  flow: TaskFlow | null
}

export function readRouteConfig(exports: ModuleExports, source: string, report: Reporter): RouteConfigResult {
  const route = readExportLiteral(exports.names.get('route'), 'route', source, report)
  if (route?.ok && !route.properties) {
    report.error(route.node, `route must be an object literal such as { kind: 'task' } (got ${snippet(source, route.node)})`)
  }
  const fields = route?.properties ?? new Map()
  // A misspelled field would leave its setting out without a word (a task
  // with no retries), so each unknown one fails the scan at its key.
  for (const [name, field] of fields) {
    if (!(ROUTE_FIELDS as readonly string[]).includes(name)) report.error(field.key, unknownFieldProblem('route', name, ROUTE_FIELDS))
  }

  // Kind: route.kind wins over the `kind` shorthand; a websocket export alone makes a hot route.
  const declaredKind = readKind(fields.get('kind')?.value, 'route.kind', report)
  const shorthand = readKind(readExportLiteral(exports.names.get('kind'), 'kind', source, report), 'kind', report)
  let kind: RouteKind
  let kindReason: string
  let kindSource: KindSource
  if (declaredKind) {
    kind = declaredKind
    kindReason = `route.kind is '${kind}'`
    kindSource = 'route.kind'
    if (shorthand && shorthand !== declaredKind) {
      report.warn(`the kind export ('${shorthand}') conflicts with route.kind ('${declaredKind}'); route.kind wins, remove one of them`)
    }
  } else if (shorthand) {
    kind = shorthand
    kindReason = `the kind export is '${kind}'`
    kindSource = 'kind'
  } else if (exports.names.has('websocket')) {
    kind = 'hot'
    kindReason = 'exports websocket and declares no kind, so the route is hot'
    kindSource = 'websocket'
  } else {
    kind = 'serverless'
    kindReason = 'declares no kind, so the route is serverless (the default)'
    kindSource = 'default'
  }

  const isTask = kind === 'task'
  // A kind that was written but could not be read (a bad value, a `route`
  // the scanner cannot see all of) is an error already: whether the route is
  // a task is then unknown, and its task config is checked as a task's.
  const kindUnread =
    !declaredKind && !shorthand && ((exports.names.has('route') && !route?.ok) || fields.has('kind') || exports.names.has('kind'))
  const other = isTask || kindUnread ? null : notATask(kind, kindSource, exports.names.has('route'))
  // A route that is not a task must not carry task config: the task it was
  // meant to be would be served to anyone instead (src/runtime/task-only.ts).
  if (other) reportTaskConfig(exports, fields, other, report)
  const readTask = other === null

  const retries = readTaskNumber(fields.get('retries')?.value, 'retries', readTask, report, retriesProblem)
  const timeout = readTaskNumber(fields.get('timeout')?.value, 'timeout', readTask, report, timeoutProblem)
  // Checked here so a mistake shows at its line; the runtime reads them from `route`.
  readTaskNumber(fields.get('priority')?.value, 'priority', readTask, report, priorityProblem)
  readTaskNumber(fields.get('retention')?.value, 'retention', readTask, report, retentionProblem)
  readTaskNumber(fields.get('maxDuration')?.value, 'maxDuration', readTask, report, maxDurationProblem)

  const schedule = readSchedule(fields.get('schedule')?.value, exports.names.get('schedule'), readTask, source, report)
  const timezone = readTimezone(fields.get('timezone')?.value, readTask, report)
  const on = readTask ? readEventTriggers(fields.get('on')?.value, exports.names.get('on'), source, report) : null
  const origins = readOrigins(fields.get('origins'), kindUnread ? null : kind, report)
  const compute = normalizeCompute(kind, fields.get('compute')?.value, report)
  const flow = readFlow(fields, readTask, report)

  return {
    kind,
    kindReason,
    explicitServerless: declaredKind === 'serverless',
    notATask: other,
    retries: isTask ? (retries ?? DEFAULT_RETRIES) : null,
    timeout: isTask ? (timeout ?? DEFAULT_TIMEOUT_MS) : null,
    schedule: isTask ? schedule : null,
    timezone: isTask ? timezone : null,
    on: isTask ? on : null,
    origins,
    compute,
    computeDeclared: fields.has('compute'),
    flow: isTask ? flow : null,
  }
}

/**
 * `route.concurrency`, `route.rateLimit`, `route.debounce` and
 * `route.priorityAging`, each checked by its rule; null when not `read`, for
 * a route known not to be a task.
 */
function readFlow(fields: Map<string, { value: StaticValue }>, read: boolean, report: Reporter): TaskFlow | null {
  if (!read) return null
  const config: Record<string, unknown> = {}
  for (const [name, check] of FLOW_FIELDS) {
    const value = fields.get(name)?.value
    if (!value?.ok) continue
    const problem = check(value.value)
    if (problem) report.error(value.node, problem)
    else config[name] = value.value
  }
  return taskFlow(config)
}

function readKind(value: StaticValue | undefined, label: string, report: Reporter): RouteKind | undefined {
  if (!value?.ok) return undefined
  if (typeof value.value === 'string' && (ROUTE_KINDS as readonly string[]).includes(value.value)) return value.value as RouteKind
  report.error(value.node, `${label} must be one of ${ROUTE_KINDS.map((k) => `'${k}'`).join(', ')} (got ${JSON.stringify(value.value)})`)
  return undefined
}

/** A numeric task field, checked by its rule; undefined when not `read`, for a route known not to be a task. */
function readTaskNumber(
  value: StaticValue | undefined,
  name: 'retries' | 'timeout' | 'priority' | 'retention' | 'maxDuration',
  read: boolean,
  report: Reporter,
  check: (n: number) => string | null,
): number | undefined {
  if (!read || !value?.ok) return undefined
  if (typeof value.value !== 'number') {
    report.error(value.node, `route.${name} must be a number (got ${JSON.stringify(value.value)})`)
    return undefined
  }
  const problem = check(value.value)
  if (problem) {
    report.error(value.node, problem)
    return undefined
  }
  return value.value
}

/** The schedule export or `route.schedule`, checked and normalized; null when not `read`, for a route known not to be a task. */
function readSchedule(
  inRoute: StaticValue | undefined,
  entry: ExportEntry | undefined,
  read: boolean,
  source: string,
  report: Reporter,
): string | null {
  if (!read) return null
  const exported = readExportLiteral(entry, 'schedule', source, report)
  let schedule: string | null = null
  for (const [value, label] of [
    [exported, 'schedule'],
    [inRoute, 'route.schedule'],
  ] as const) {
    if (!value?.ok) continue
    if (typeof value.value !== 'string') {
      report.error(value.node, `${label} must be a cron expression string such as '0 * * * *' (got ${JSON.stringify(value.value)})`)
      continue
    }
    const problem = checkSchedule(value.value)
    if (problem) {
      report.error(value.node, problem)
      continue
    }
    // Single-spaced, as the runtime compares them: targets turn this into
    // platform cron triggers, and two spellings would fire a task twice.
    const normalized = normalizeCron(value.value)
    // route.schedule is read second and wins, as it does at runtime.
    if (schedule !== null && schedule !== normalized) {
      report.warn(
        `route.schedule ('${value.value}') and the schedule export ('${schedule}') differ; route.schedule wins, remove one of them`,
      )
    }
    schedule = normalized
  }
  return schedule
}

/**
 * Checking a schedule parses it with croner and looks for its next run, the
 * costliest rule of a scan; an app repeats a few schedules across many
 * tasks, so each expression is checked once per process. The answer depends
 * on the expression alone (in UTC, as the scanner checks it).
 */
const scheduleChecks = new Map<string, string | null>()
const MAX_SCHEDULE_CHECKS = 1_000

/** A problem message for a task schedule, or `null` when it is a valid five-field cron expression that fires. */
export function checkCronExpression(expression: unknown, timezone: string | null = null): string | null {
  return scheduleProblem(expression, timezone, cronerClock)
}

function checkSchedule(expression: string): string | null {
  let problem = scheduleChecks.get(expression)
  if (problem === undefined) {
    problem = checkCronExpression(expression)
    if (scheduleChecks.size < MAX_SCHEDULE_CHECKS) scheduleChecks.set(expression, problem)
  }
  return problem
}

function readTimezone(value: StaticValue | undefined, read: boolean, report: Reporter): string | null {
  if (!read || !value?.ok) return null
  const problem = timezoneProblem(value.value)
  if (problem) {
    report.error(value.node, problem)
    return null
  }
  return value.value as string
}

/**
 * Origins must be inline string literals that parse as URLs; they are
 * normalized to bare origins. A
 * computed entry could open the handshake to any site, so it fails the build.
 */
function readOrigins(field: StaticProperty | undefined, kind: RouteKind | null, report: Reporter): string[] | null {
  if (field === undefined) return null
  // Only a hot route's WebSocket handshake reads it: anywhere else the
  // allowlist would look like a protection it does not give.
  if (kind !== 'hot') {
    if (kind !== null) {
      report.error(
        field.key,
        `route.origins applies to hot routes only (the WebSocket handshake), and this route is ${kind}; set kind: 'hot' if it serves WebSockets, or remove route.origins`,
      )
    }
    return null
  }
  const value = field.value
  if (!value.items) {
    if (value.ok) report.error(value.node, `route.origins must be an array of origin strings such as ['https://example.com']`)
    return null
  }
  const origins: string[] = []
  for (const item of value.items) {
    if (!item.ok) continue
    if (typeof item.value !== 'string') {
      report.error(
        item.node,
        `route.origins entries must be quoted URL strings such as 'https://example.com' (got ${JSON.stringify(item.value)})`,
      )
      continue
    }
    const origin = normalizeOrigin(item.value)
    if (origin === null) {
      report.error(
        item.node,
        `route.origins entry ${JSON.stringify(item.value)} is not an http(s) or ws(s) URL; write the full origin, such as 'https://example.com'`,
      )
      continue
    }
    if (!origins.includes(origin)) origins.push(origin)
  }
  return origins
}
