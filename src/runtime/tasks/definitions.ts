/**
 * Turns the app's routes into task definitions. Only routes whose resolved
 * kind is `task` count; the handler is the file's `POST(ctx)` export and
 * `input` its schema (spec "Route configuration": other top-level exports of
 * a task file). Hand-written routes are checked here, at startup, so a bad
 * option fails loudly instead of at the first run.
 */
import { Cron } from 'croner'
import type { RuntimeApiRoute, TaskContext } from '../../types.ts'
import { MAX_TIMEOUT_MS, resolveRoute } from '../route-config.ts'
import { isSchemaDefinition, isStandardSchema } from '../schema.ts'
import { describe } from './options.ts'

export interface TaskDefinition {
  /** Dot-form name (`jobs.notify`). */
  name: string
  /** Route path (`/api/jobs/notify`). */
  path: string
  handler: (ctx: TaskContext) => unknown
  /** The `input` export: a Standard Schema or a `defineSchema()` object. */
  input: unknown
  /** Extra attempts after the first failure. */
  retries: number
  /** Per-attempt timeout, milliseconds. */
  timeout: number
  /** Five-field cron expression, normalized to single spaces. */
  schedule: string | null
  /** IANA time zone of the schedule; `null` means UTC. */
  timezone: string | null
}

/** Options every in-process cron job uses, so validation and scheduling agree. */
export function cronOptions(timezone: string | null) {
  return {
    timezone: timezone ?? 'UTC',
    // Exactly the five standard fields (spec "Route configuration": schedule).
    mode: '5-part' as const,
    // Vixie cron: when both day-of-month and day-of-week are restricted, a
    // day matching either one fires.
    domAndDow: false,
    // Vixie cron's rule for which jobs run once across DST changes.
    fixedTimeRule: 'no-wildcard' as const,
  }
}

/** Collapses runs of whitespace so `runScheduled(cron)` can compare expressions. */
export function normalizeCron(expression: string): string {
  return expression.trim().split(/\s+/).join(' ')
}

export function defineTasks(routes: readonly RuntimeApiRoute[]): Map<string, TaskDefinition> {
  if (!Array.isArray(routes)) throw new TypeError(`createTaskRuntime(): routes must be an array (got ${describe(routes)})`)
  const tasks = new Map<string, TaskDefinition>()
  for (const route of routes) {
    const resolved = resolveRoute(route)
    if (resolved.kind !== 'task' || resolved.name === null) continue
    const { name, path } = resolved
    const where = `Task "${name}" (${path})`
    const mod = route.module
    if (!name) throw new TypeError(`${where}: a task needs a path below /api, such as /api/report`)
    const previous = tasks.get(name)
    if (previous) throw new TypeError(`${where}: the task name "${name}" is already used by ${previous.path}`)
    if (typeof mod.POST !== 'function') {
      throw new TypeError(`${where}: a task's handler is its exported POST(ctx) function (got ${describe(mod.POST)})`)
    }
    const { retries, timeout, timezone } = resolved
    if (!Number.isInteger(retries) || retries < 0) {
      throw new TypeError(`${where}: route.retries must be a non-negative integer (got ${describe(retries)})`)
    }
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_MS) {
      throw new TypeError(
        `${where}: route.timeout must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS} (got ${describe(timeout)})`,
      )
    }
    if (mod.input !== undefined && mod.input !== null && !isStandardSchema(mod.input) && !isSchemaDefinition(mod.input)) {
      throw new TypeError(`${where}: the "input" export must be a Standard Schema or a defineSchema() object`)
    }
    if (timezone !== null) checkTimezone(where, timezone)
    const schedule = resolved.schedule === null ? null : checkSchedule(where, resolved.schedule, timezone)
    tasks.set(name, {
      name,
      path,
      handler: mod.POST as (ctx: TaskContext) => unknown,
      input: mod.input,
      retries,
      timeout,
      schedule,
      timezone,
    })
  }
  return tasks
}

function checkTimezone(where: string, timezone: unknown): void {
  if (typeof timezone !== 'string' || timezone === '') {
    throw new TypeError(`${where}: route.timezone must be an IANA time zone name (got ${describe(timezone)})`)
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch {
    throw new TypeError(`${where}: route.timezone "${timezone}" is not a known IANA time zone, such as "Europe/Paris"`)
  }
}

function checkSchedule(where: string, schedule: unknown, timezone: string | null): string {
  if (typeof schedule !== 'string') {
    throw new TypeError(`${where}: schedule must be a five-field cron expression (got ${describe(schedule)})`)
  }
  const normalized = normalizeCron(schedule)
  try {
    // croner's 5-part mode still reads nicknames such as @daily; the spec
    // (and the scanner) allow the five standard fields only.
    const fields = normalized.split(' ').length
    if (fields !== 5) throw new Error(`it has ${fields} field${fields === 1 ? '' : 's'}`)
    // Without a callback croner only parses; nothing is scheduled.
    new Cron(normalized, cronOptions(timezone))
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error)
    throw new TypeError(`${where}: schedule "${schedule}" is not a valid five-field cron expression: ${reason}`)
  }
  return normalized
}
