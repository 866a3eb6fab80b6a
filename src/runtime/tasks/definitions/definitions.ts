/**
 * Turns the app's routes into task definitions. Only routes whose resolved
 * kind is `task` count; the handler is the file's `POST(ctx)` export and
 * `input` its schema (other top-level exports of a task file). Hand-written routes are checked here, at startup, so a bad
 * option fails loudly instead of at the first run.
 */
import type { RuntimeApiRoute } from '../../types/modules.ts'
import type { TaskContext } from '../../types/task-context.ts'
import { resolveRoute } from '../../route-config.ts'
import {
  concurrencyProblem,
  maxDurationProblem,
  debounceProblem,
  normalizeCron,
  priorityAgingProblem,
  rateLimitProblem,
  retentionProblem,
  retriesProblem,
  scheduleProblem,
  timeoutProblem,
  timezoneProblem,
} from '../../rules.ts'
import { isSchemaDefinition, isStandardSchema } from '../../schema.ts'
import { describe } from '../../describe.ts'
import { taskInputProblem } from './define-task.ts'
import { taskFlow } from '../flow/flow.ts'
import type { TaskDefinition } from '../../types/task-definition.ts'
import type { CronClock } from './cron-clock.ts'
import { eventListProblem, eventNames } from '../../events/rules.ts'
import { versionProblem } from './versions.ts'
import { priorityProblem } from './options.ts'

export type { TaskDefinition } from '../../types/task-definition.ts'

/** `clock` checks each schedule in full; without one, only its fields are counted (see `scheduleProblem`). */
export function defineTasks(routes: readonly RuntimeApiRoute[], clock?: CronClock, appVersion?: string): Map<string, TaskDefinition> {
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
    const config = mod.route ?? {}
    const problem =
      retriesProblem(retries) ??
      timeoutProblem(timeout) ??
      (timezone === null ? null : timezoneProblem(timezone)) ??
      (resolved.schedule === null ? null : scheduleProblem(resolved.schedule, timezone, clock)) ??
      (config.concurrency === undefined ? null : concurrencyProblem(config.concurrency)) ??
      (config.rateLimit === undefined ? null : rateLimitProblem(config.rateLimit)) ??
      (config.debounce === undefined ? null : debounceProblem(config.debounce)) ??
      (config.priority === undefined ? null : priorityProblem(config.priority)) ??
      (config.priorityAging === undefined ? null : priorityAgingProblem(config.priorityAging)) ??
      (config.retention === undefined ? null : retentionProblem(config.retention)) ??
      (config.maxDuration === undefined ? null : maxDurationProblem(config.maxDuration)) ??
      (resolved.on === null ? null : eventListProblem(resolved.on)) ??
      (route.version === undefined ? null : versionProblem(route.version))
    if (problem) throw new TypeError(`${where}: ${problem}`)
    if (mod.input !== undefined && mod.input !== null && !isStandardSchema(mod.input) && !isSchemaDefinition(mod.input)) {
      throw new TypeError(`${where}: the "input" export must be a Standard Schema or a defineSchema() object`)
    }
    const inputProblem = taskInputProblem(mod.POST, mod.input)
    if (inputProblem) throw new TypeError(`${where}: ${inputProblem}`)
    const schedule = resolved.schedule === null ? null : normalizeCron(resolved.schedule)
    tasks.set(name, {
      name,
      path,
      handler: mod.POST as (ctx: TaskContext) => unknown,
      input: mod.input,
      retries,
      timeout,
      schedule,
      timezone,
      on: resolved.on === null ? [] : eventNames(resolved.on as string | string[]),
      flow: route.flow ?? taskFlow(config),
      priority: config.priority ?? 0,
      ...(config.retention === undefined ? {} : { retentionMs: config.retention * 1000 }),
      ...(config.maxDuration === undefined ? {} : { maxDurationMs: config.maxDuration * 1000 }),
      ...((appVersion ?? route.version) === undefined ? {} : { version: appVersion ?? route.version }),
    })
  }
  return tasks
}
