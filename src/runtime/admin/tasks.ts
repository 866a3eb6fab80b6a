/**
 * The task admin surface:
 *
 * | Method | Path                          | Answer |
 * |--------|-------------------------------|--------|
 * | GET    | `/__tasks`                    | 200 `{ tasks: TaskSummary[] }` |
 * | POST   | `/__tasks/<name>`             | 202 `{ id, status }`, before the handler finishes |
 * | POST   | `/__tasks/<name>/batch`       | 202 `{ runs }`: one `{ ok, id, status }` or `{ ok: false, error, code }` per payload of the JSON array |
 * | POST   | `/__tasks/<name>/fire`        | 202 `{ id, status }` of the run one tick of its schedule starts now; 404 `TASK_NOT_FOUND`; 400 `NOT_SCHEDULED`; 409 `TICK_SKIPPED` |
 * | GET    | `/__tasks/<id>`               | 200 the run record; 404 `RUN_NOT_FOUND` |
 * | POST   | `/__tasks/tokens/<token>`     | 200 `{ ok, status: 'completed' }`; 404 `TOKEN_NOT_FOUND`; 409 `TOKEN_ALREADY_COMPLETED` / `TOKEN_TIMED_OUT` / `RUN_CANCELLED` |
 * | GET    | `/__tasks/runs`               | 200 `{ runs: RunSummary[], cursor? }`, newest first (`?task=&status=&version=&limit=&cursor=`); 400 `INVALID_QUERY` |
 * | GET    | `/__tasks/runs/<id>`          | as `GET /__tasks/<id>` |
 * | POST   | `/__tasks/runs/<id>/cancel`   | 200 `{ id, status: 'cancelled', cancelledWith }` (`?children=all` also cancels the runs it enqueued, `?children=none` leaves the child runs it waits on running; `?compensate=true` undoes its completed steps first: 200 `{ …, status: 'running', compensation }`); 404 `RUN_NOT_FOUND`; 409 `RUN_FINISHED`; 400 `INVALID_QUERY` |
 * | POST   | `/__tasks/runs/<id>/replay`   | 202 `{ id, status }` of the new run; the body, if any, is `{ fromStep?, input? }` (`ReplayOptions`); 404 `RUN_NOT_FOUND` / `TASK_NOT_FOUND`; 400 `STEP_NOT_RECORDED` / `INVALID_OPTIONS` |
 * | POST   | `/__tasks/runs/<id>/wake`     | 200 `{ id, status }`: a sleeping or delayed run goes on now; 404 `RUN_NOT_FOUND`; 409 `RUN_FINISHED` / `RUN_NOT_SLEEPING` |
 * |        | `/__tasks/runs/<id>/signals…` | signals into the run (`signals.ts`; `signal-endpoint.ts` for a run token and CORS) |
 * |        | `/__tasks/runs/<id>/updates…` | updates a run answers (`updates.ts`) |
 * | GET    | `/__tasks/runs/<id>/logs`     | 200 a page of the run's `ctx.log` entries (`?after=&limit=`, `run-logs.ts`); 404 `RUN_NOT_FOUND`; 400 `INVALID_QUERY` |
 * | GET    | `/__tasks/events`             | 200 `text/event-stream` of `{ id, taskName, status }`; 501 `NOT_IMPLEMENTED` where the engine runs elsewhere, or the host serves no streams (`streams.ts`) |
 * | GET    | `/__tasks/runs/<id>/stream`   | 200 `text/event-stream` of the run's `RunProgress` until it finishes (`run-stream.ts`); 404 `RUN_NOT_FOUND`; 501 as above |
 * | GET    | `/__tasks/<id>/stream`        | as `GET /__tasks/runs/<id>/stream` |
 * |        | `/__tasks/schedules…`, `POST /__tasks/<name>/schedules` | runtime schedules (`schedules.ts`) |
 *
 * `runs`, `events`, `tokens` and `schedules` are words of the surface only on GET or
 * below themselves: `POST /__tasks/runs` still starts a task named `runs`
 * (task routes are one segment), and run ids are UUIDs, never these words.
 *
 * Every request is authorized first (see `auth.ts`), but for a run's
 * stream and a signal sent to a run, which also take a run token and answer
 * pages of other origins (`run-access.ts`, `cors.ts`), and so authorize
 * themselves. POST bodies are JSON,
 * sent as such (415 `UNSUPPORTED_MEDIA_TYPE` otherwise, see
 * `content-type.ts`), at most `bodyLimit` bytes; the optional `Idempotency-Key`,
 * `Svc-Delay-Seconds`, `Svc-Priority`, `Svc-Deadline` and `Svc-Tags` headers carry `EnqueueOptions` (400 `INVALID_OPTIONS`
 * when they break the enqueue rule). A run store full of live runs answers
 * 503 `STORE_FULL` with `Retry-After`.
 */
import type { Logger, ReplayOptions, RequestInfo, RunRecord, RunTrace, TaskRuntime, TriggerOptions } from '../types.ts'
import { internalError, jsonError, knownErrorResponse, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { decodeSegment, trimTrailingSlashes } from '../http/path.ts'
import { readJsonBody } from '../http/body.ts'
import { enqueueOptionsFromHeaders } from '../tasks/client/client.ts'
import { MAX_BATCH_ITEMS } from '../tasks/flow/batch.ts'
import { type CancelReach, cancelReachParam, isCancelReach } from '../tasks/engine/cancel-children.ts'
import { fromStepProblem } from '../tasks/engine/replay-steps.ts'
import { describe } from '../describe.ts'
import type { EnvLike } from '../env.ts'
import { authorize, type LoopbackExemption } from './auth.ts'
import { unsupportedContent } from './content-type.ts'
import { InvalidQueryError, parseRunsQuery, runSummary } from './runs-query.ts'
import { type BulkAction, bulkRuns, parseBulkRequest } from './bulk-runs.ts'
import { callbackEndpoint, isCallbackPath } from './callbacks.ts'
import { runLogPage } from './run-logs.ts'
import { type EventStreams, NO_STREAMS, type RunEventsOptions } from './streams.ts'
import { registerTokenSecret } from './token-secret.ts'
import { isScheduleRoute, scheduleRoute } from './schedules.ts'
import { listSignalsRoute } from './signals.ts'
import { listUpdatesRoute, updateRunRoute } from './updates.ts'
import { createSignalEndpoint } from './signal-endpoint.ts'

export const TASKS_PREFIX = '/__tasks'

export interface AdminOptions {
  runtime: TaskRuntime
  env: EnvLike
  bodyLimit: number
  R: ResponseClass
  logger: Logger
  dev: boolean
  /** Hand each started run to `info.waitUntil` until it completes or fails. */
  holdRuns: boolean
  /** Limits of the event streams. */
  runEvents?: RunEventsOptions
  /**
   * The part that serves the event streams (`EVENT_STREAMS`).
   * @default none: both streams answer 501 `NOT_IMPLEMENTED`
   */
  streams?: EventStreams
  /** The development exemption of the auth, where the host reports peer addresses. */
  loopback?: LoopbackExemption
  /**
   * With telemetry: the trace context of a request's span, which a run it
   * starts continues. Handed over rather than read from the active context,
   * which a host without a context manager (a worker) does not keep.
   */
  traceOf?: (request: Request) => RunTrace | undefined
}

export type AdminHandler = (request: Request, pathname: string, info?: RequestInfo) => Promise<Response>

const JSON_HEADERS = { 'content-type': 'application/json' }

export function createAdminHandler(options: AdminOptions): AdminHandler {
  const { runtime, env, bodyLimit, R, logger, dev, holdRuns, loopback, traceOf } = options
  const json = (status: number, body: unknown) => new R(JSON.stringify(body), { status, headers: JSON_HEADERS })
  const streams = (options.streams ?? NO_STREAMS).create({ runtime, env, R, logger, dev, runEvents: options.runEvents, loopback })
  // createRunToken() signs with the secret this surface checks, while its runtime is the active one.
  registerTokenSecret(runtime, env)
  // What the schedules' and signals' endpoints (schedules.ts, signals.ts) work with.
  const routes = { runtime, R, bodyLimit, json }
  const signal = createSignalEndpoint({ routes, env, logger, dev, origins: options.runEvents?.origins, loopback })

  async function route(request: Request, pathname: string, info: RequestInfo | undefined): Promise<Response> {
    const method = request.method
    const rest = trimTrailingSlashes(pathname.slice(TASKS_PREFIX.length))
    const segments = rest === '' ? [] : rest.slice(1).split('/').map(decodeSegment)

    if (segments.length === 0) {
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      return json(200, { tasks: await runtime.listTasks() })
    }

    if (segments.length === 2 && segments[0] === 'tokens') {
      if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
      const { value } = await readJsonBody(request, bodyLimit)
      const tokenId = segments[1]
      const result = await runtime.completeToken(tokenId, value)
      switch (result) {
        case 'completed':
          return json(200, { ok: true, status: 'completed' })
        case 'not_found':
          return jsonError(R, 404, 'TOKEN_NOT_FOUND', `No waitForToken is waiting on token "${tokenId}"`)
        case 'timed_out':
          return jsonError(R, 409, 'TOKEN_TIMED_OUT', `Token "${tokenId}" already timed out`, undefined, { status: 'timed_out' })
        case 'run_cancelled':
          return jsonError(R, 409, 'RUN_CANCELLED', `The run that waits on token "${tokenId}" was cancelled`, undefined, {
            status: 'run_cancelled',
          })
        default:
          return jsonError(R, 409, 'TOKEN_ALREADY_COMPLETED', `Token "${tokenId}" was already completed`, undefined, {
            status: 'already_completed',
          })
      }
    }

    const isRead = method === 'GET' || method === 'HEAD'
    if (segments[0] === 'runs' && (segments.length > 1 || isRead)) return runs(request, pathname, segments.slice(1), info)
    if (isScheduleRoute(method, segments)) return scheduleRoute(routes, request, pathname, segments)
    if (segments.length === 1 && segments[0] === 'events' && isRead) return streams.events()

    if (segments.length === 2 && segments[1] === 'batch') {
      if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
      return batch(request, segments[0], info)
    }
    if (segments.length === 2 && segments[1] === 'fire') {
      if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
      return held(await runtime.fireSchedule(segments[0]), info)
    }
    if (segments.length !== 1) return jsonError(R, 404, 'NOT_FOUND', `No admin endpoint matches ${method} ${pathname}`)

    // `<name>` on POST, `<id>` on GET (the same path position serves both).
    const target = segments[0]
    if (method === 'POST') {
      const opts = triggerOptions(request)
      if (opts instanceof Response) return opts
      const { value } = await readJsonBody(request, bodyLimit)
      return held(await runtime.trigger(target, value, opts), info)
    }
    if (isRead) return runRecord(target)
    return methodNotAllowed(R, method, pathname, 'GET, HEAD, POST')
  }

  /** 202 `{ id, status }` of a run just started. */
  function held(run: RunRecord, info: RequestInfo | undefined): Response {
    // Platforms that freeze or recycle after the response (workers, function
    // platforms) keep the run alive through waitUntil until it settles.
    if (holdRuns && run.status === 'running') info?.waitUntil?.(runtime.waitForRun(run.id).catch(() => undefined))
    return json(202, { id: run.id, status: run.status })
  }

  /**
   * A start's options: the enqueue headers' (a 400 `INVALID_OPTIONS` answer
   * for a bad one), and the request span's trace, which the runs continue.
   */
  function triggerOptions(request: Request): TriggerOptions | Response {
    let opts: TriggerOptions
    try {
      opts = enqueueOptionsFromHeaders(request.headers)
    } catch (error) {
      return jsonError(R, 400, 'INVALID_OPTIONS', (error as Error).message)
    }
    const trace = traceOf?.(request)
    return trace === undefined ? opts : { ...opts, trace }
  }

  /** `POST /__tasks/<name>/batch`: a JSON array of payloads, one run each. */
  async function batch(request: Request, name: string, info: RequestInfo | undefined): Promise<Response> {
    const opts = triggerOptions(request)
    if (opts instanceof Response) return opts
    const { value } = await readJsonBody(request, bodyLimit)
    if (!Array.isArray(value)) {
      return jsonError(
        R,
        400,
        'INVALID_BATCH',
        `POST /__tasks/${name}/batch takes a JSON array of payloads, one run each (got ${describe(value)})`,
      )
    }
    if (value.length > MAX_BATCH_ITEMS) {
      return jsonError(
        R,
        400,
        'INVALID_BATCH',
        `A batch starts at most ${MAX_BATCH_ITEMS.toLocaleString('en')} runs (got ${value.length}); send them in batches`,
      )
    }
    const runs = await runtime.triggerMany(name, value, opts)
    if (holdRuns && info?.waitUntil) {
      for (const run of runs) if (run.ok && run.status === 'running') info.waitUntil(runtime.waitForRun(run.id).catch(() => undefined))
    }
    return json(202, { runs })
  }

  async function runRecord(id: string): Promise<Response> {
    const run = await runtime.getRun(id)
    if (!run) return jsonError(R, 404, 'RUN_NOT_FOUND', `No run has id "${id}"`)
    return json(200, run)
  }

  /** `/__tasks/runs`, `/__tasks/runs/<id>` and `/__tasks/runs/<id>/<action>`. */
  async function runs(request: Request, pathname: string, rest: string[], info: RequestInfo | undefined): Promise<Response> {
    const method = request.method
    const isRead = method === 'GET' || method === 'HEAD'
    if (rest.length === 0) return isRead ? listRuns(new URL(request.url).searchParams) : methodNotAllowed(R, method, pathname, 'GET, HEAD')
    if (rest.length === 1 && method === 'POST' && isBulkAction(rest[0])) {
      const { value } = await readJsonBody(request, bodyLimit)
      return json(200, await bulkRuns(runtime, rest[0], parseBulkRequest(rest[0], value)))
    }
    if (rest.length === 1) return isRead ? runRecord(rest[0]) : methodNotAllowed(R, method, pathname, 'GET, HEAD')
    const [id, action] = rest
    if (rest.length === 3 && action === 'updates') return updateRunRoute(routes, request, pathname, id, rest[2])
    if (rest.length !== 2 || !RUN_ACTIONS.has(action)) {
      return jsonError(
        R,
        404,
        'NOT_FOUND',
        `No admin endpoint matches ${method} ${pathname}; a run's actions are cancel, replay, wake, logs, signals and updates`,
      )
    }
    if (action === 'logs') {
      if (!isRead) return methodNotAllowed(R, method, pathname, 'GET, HEAD')
      const run = await runtime.getRun(id)
      if (!run) return jsonError(R, 404, 'RUN_NOT_FOUND', `No run has id "${id}"`)
      return json(200, runLogPage(run, new URL(request.url).searchParams))
    }
    if (action === 'signals') return isRead ? listSignalsRoute(routes, id) : methodNotAllowed(R, method, pathname, 'GET, HEAD')
    if (action === 'updates') return isRead ? listUpdatesRoute(routes, id) : methodNotAllowed(R, method, pathname, 'GET, HEAD')
    if (method !== 'POST') return methodNotAllowed(R, method, pathname, 'POST')
    if (action === 'cancel') {
      const params = new URL(request.url).searchParams
      const run = await runtime.cancel(id, { children: cancelChildrenParam(params), compensate: compensateParam(params) })
      const body = { id: run.id, status: run.status, cancelledWith: run.cancelledWith }
      return json(200, run.compensation === undefined || run.status !== 'running' ? body : { ...body, compensation: run.compensation })
    }
    if (action === 'wake') {
      const run = await runtime.wake(id)
      return json(200, { id: run.id, status: run.status })
    }
    const { value } = await readJsonBody(request, bodyLimit)
    const options = replayOptions(value)
    if (typeof options === 'string') return jsonError(R, 400, 'INVALID_OPTIONS', options)
    return held(await runtime.replay(id, options), info)
  }

  async function listRuns(params: URLSearchParams): Promise<Response> {
    const { limit, ...query } = parseRunsQuery(params)
    // A cursor names the last run of the previous page; once that run is
    // evicted, its place in the order is gone, which is said rather than
    // answered with a page that silently ends.
    if (query.cursor !== undefined && !(await runtime.getRun(query.cursor))) {
      throw new InvalidQueryError(
        `cursor ${JSON.stringify(query.cursor)} names no run the store holds (it may have been evicted since); list again without a cursor`,
      )
    }
    const found = await runtime.listRuns({ ...query, limit: limit + 1 })
    const page = found.slice(0, limit)
    const body: { runs: unknown[]; cursor?: string } = { runs: page.map(runSummary) }
    if (found.length > limit) body.cursor = page[page.length - 1].id
    return json(200, body)
  }

  // A callback's signed token is its credential: no secret, and any body type.
  const callback = callbackEndpoint({ runtime, env, R, bodyLimit, now: () => Date.now() })

  return async (request, pathname, info) => {
    const streamOf = streamedRun(pathname)
    if (streamOf !== undefined) return streams.run(request, streamOf, info)
    const signalOf = signalTarget(pathname)
    if (signalOf !== undefined) return signal(request, pathname, signalOf.runId, signalOf.name, info)
    try {
      if (isCallbackPath(pathname)) return await callback(request, pathname)
      const denied = authorize(request, info, env, R, loopback) ?? unsupportedContent(request, R)
      if (denied) return denied
      return await route(request, pathname, info)
    } catch (error) {
      // ValidationError (400), TaskNotFoundError (404), StoreFullError (503), body errors (400/413/415) carry their status.
      const known = knownErrorResponse(R, error)
      if (known) return known
      logger.error(`[svc] ${request.method} ${pathname} failed:`, error)
      return internalError(R, error, dev)
    }
  }
}

/**
 * The run id of `/__tasks/runs/<id>/stream` or `/__tasks/<id>/stream`, else
 * `undefined`. `<id>` of the short form is never a word of the surface:
 * `/__tasks/runs/stream` asks for the record of run id `stream`.
 */
function streamedRun(pathname: string): string | undefined {
  const rest = trimTrailingSlashes(pathname.slice(TASKS_PREFIX.length))
  if (!rest.endsWith('/stream')) return undefined
  const segments = rest.slice(1).split('/')
  if (segments.length === 3 && segments[0] === 'runs') return decodeSegment(segments[1])
  if (segments.length === 2 && !SURFACE_WORDS.has(segments[0])) return decodeSegment(segments[0])
  return undefined
}

/** The run id and signal name of `/__tasks/runs/<id>/signals/<name>`, else `undefined`. */
function signalTarget(pathname: string): { runId: string; name: string } | undefined {
  const segments = trimTrailingSlashes(pathname.slice(TASKS_PREFIX.length)).slice(1).split('/')
  if (segments.length !== 4 || segments[0] !== 'runs' || segments[2] !== 'signals') return undefined
  return { runId: decodeSegment(segments[1]), name: decodeSegment(segments[3]) }
}

const SURFACE_WORDS = new Set(['runs', 'events', 'tokens', 'callbacks'])

/** What `/__tasks/runs/<id>/<action>` may name. */
const RUN_ACTIONS = new Set(['cancel', 'replay', 'wake', 'logs', 'signals', 'updates'])

/** `/__tasks/runs/cancel` and `/__tasks/runs/replay` act on the runs a filter finds (bulk-runs.ts). */
function isBulkAction(word: string): word is BulkAction {
  return word === 'cancel' || word === 'replay'
}

/** `?children=` of a cancel: `waited` (the default), `all` or `none`. */
function cancelChildrenParam(params: URLSearchParams): CancelReach {
  const children = cancelReachParam(params.get('children'))
  if (!isCancelReach(children)) throw new InvalidQueryError(children)
  return children
}

/** `?compensate=` of a cancel: `true` undoes the run's completed steps first, `false` (the default) does not. */
function compensateParam(params: URLSearchParams): boolean {
  const value = params.get('compensate')
  if (value === null || value === 'false') return false
  if (value === 'true') return true
  throw new InvalidQueryError(`?compensate= is true or false (got ${JSON.stringify(value)})`)
}

/** The body of a replay, `{ fromStep?, input? }`, or why it is not one. */
function replayOptions(value: unknown): ReplayOptions | string {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return `A replay's body is { fromStep?, input? }, or none (got ${describe(value)})`
  }
  const unknown = Object.keys(value).filter((key) => key !== 'fromStep' && key !== 'input')
  if (unknown.length > 0)
    return `A replay's body takes fromStep and input only (got ${unknown.map((key) => JSON.stringify(key)).join(', ')})`
  return fromStepProblem((value as ReplayOptions).fromStep) ?? (value as ReplayOptions)
}
