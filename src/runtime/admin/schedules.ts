/**
 * Runtime schedules on the task admin surface (`TaskRuntime.schedules`,
 * docs/http-api.md "Schedules"):
 *
 * | Method | Path                                   | Answer |
 * |--------|----------------------------------------|--------|
 * | POST   | `/__tasks/<name>/schedules`            | 201 the schedule made from the body `{ cron, timezone?, input?, key?, enabled? }`, or 200 the one of the same task and `key`, updated |
 * | GET    | `/__tasks/schedules`                   | 200 `{ schedules }`, oldest first (`?task=&key=`) |
 * | GET    | `/__tasks/schedules/<id>`              | 200 the schedule; 404 `SCHEDULE_NOT_FOUND` |
 * | PATCH  | `/__tasks/schedules/<id>`              | 200 the schedule, changed by the body `{ cron?, timezone?, input?, enabled? }` |
 * | DELETE | `/__tasks/schedules/<id>`              | 200 `{ id, deleted: true }`; 404 `SCHEDULE_NOT_FOUND` |
 * | POST   | `/__tasks/schedules/<id>/pause`        | 200 the schedule, paused (`resume` likewise) |
 * | POST   | `/__tasks/schedules/<id>/trigger`      | 202 `{ tick, runId }` of a run started now |
 * | POST   | `/__tasks/schedules/<id>/backfill`     | 202 `{ runs: [{ tick, runId }] }`, one per tick of the body's `{ from, to }` |
 *
 * A body that breaks a rule is 400 `INVALID_SCHEDULE`, naming it; an input
 * the task's schema refuses is 400 `VALIDATION_FAILED`. A runtime that
 * keeps no schedules (its engine runs elsewhere, or it reads no cron)
 * answers 501 `SCHEDULES_UNSUPPORTED`.
 */
import type { SchedulesApi, TaskRuntime } from '../types.ts'
import { jsonError, methodNotAllowed } from '../http/errors.ts'
import { readJsonBody } from '../http/body.ts'
import type { ResponseClass } from '../http/types.ts'

export interface ScheduleRoutes {
  runtime: TaskRuntime
  R: ResponseClass
  bodyLimit: number
  json(status: number, body: unknown): Response
}

const ACTIONS = new Set(['pause', 'resume', 'trigger', 'backfill'])

/** Whether `segments` (the path below `/__tasks`) are a schedule route of `method`. */
export function isScheduleRoute(method: string, segments: readonly string[]): boolean {
  if (segments.length === 2 && segments[1] === 'schedules') return true
  return segments[0] === 'schedules' && (segments.length > 1 || method === 'GET' || method === 'HEAD')
}

export async function scheduleRoute(
  routes: ScheduleRoutes,
  request: Request,
  pathname: string,
  segments: readonly string[],
): Promise<Response> {
  const { R, json } = routes
  const method = request.method
  const schedules = routes.runtime.schedules
  if (!schedules) {
    return jsonError(R, 501, 'SCHEDULES_UNSUPPORTED', 'This task runtime keeps no schedules: its engine runs elsewhere')
  }
  try {
    if (segments[1] === 'schedules') {
      if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
      const body = await objectBody(routes, request, 'a schedule is { cron, timezone?, input?, key?, enabled? }')
      const made = await schedules.create({ ...body, task: segments[0] } as Parameters<SchedulesApi['create']>[0])
      // A schedule of the same task and key, updated, kept its creation time.
      return json(made.createdAt === made.updatedAt ? 201 : 200, made)
    }
    const [, id, action] = segments
    if (id === undefined) {
      const params = new URL(request.url).searchParams
      return json(200, { schedules: await schedules.list({ task: params.get('task') ?? undefined, key: params.get('key') ?? undefined }) })
    }
    if (segments.length === 2) return await item(routes, schedules, request, pathname, id)
    if (segments.length !== 3 || !ACTIONS.has(action)) {
      return jsonError(
        R,
        404,
        'NOT_FOUND',
        `No admin endpoint matches ${method} ${pathname}; a schedule's actions are pause, resume, trigger and backfill`,
      )
    }
    if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
    if (action === 'pause') return json(200, await schedules.pause(id))
    if (action === 'resume') return json(200, await schedules.resume(id))
    if (action === 'trigger') return json(202, await schedules.trigger(id))
    const range = await objectBody(routes, request, 'a backfill is { from, to }, two ISO 8601 instants')
    return json(202, { runs: await schedules.backfill(id, range.from as string, range.to as string) })
  } catch (error) {
    // The schedules API throws these for a caller's mistake only.
    if (error instanceof TypeError || error instanceof RangeError) return jsonError(R, 400, 'INVALID_SCHEDULE', error.message)
    throw error
  }
}

async function item(routes: ScheduleRoutes, schedules: SchedulesApi, request: Request, pathname: string, id: string): Promise<Response> {
  const { R, json } = routes
  switch (request.method) {
    case 'GET':
    case 'HEAD': {
      const schedule = await schedules.get(id)
      return schedule ? json(200, schedule) : jsonError(R, 404, 'SCHEDULE_NOT_FOUND', `Schedule "${id}" not found`)
    }
    case 'PATCH':
      return json(200, await schedules.update(id, await objectBody(routes, request, 'a change is { cron?, timezone?, input?, enabled? }')))
    case 'DELETE':
      return (await schedules.delete(id))
        ? json(200, { id, deleted: true })
        : jsonError(R, 404, 'SCHEDULE_NOT_FOUND', `Schedule "${id}" not found`)
    default:
      return methodNotAllowed(R, request.method, pathname, 'GET, HEAD, PATCH, DELETE')
  }
}

async function objectBody(routes: ScheduleRoutes, request: Request, shape: string): Promise<Record<string, unknown>> {
  const { value } = await readJsonBody(request, routes.bodyLimit)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`The body must be a JSON object: ${shape}`)
  return value as Record<string, unknown>
}
