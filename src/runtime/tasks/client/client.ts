/**
 * The HTTP side of `enqueue()`, `completeToken()`, `cancelRun()` and `sendEvents()`, used when no task
 * runtime is active in this process: they call the task admin surface of the
 * server that runs the tasks, with the caller's trace context
 * (`telemetry/outgoing.ts`), so the runs they start continue its trace.
 */
import type {
  BatchItem,
  CancelOptions,
  CancelRunResult,
  CompleteTokenResult,
  EnqueueOptions,
  EnqueueResult,
  EventInput,
  RunCompensation,
  SentEvent,
} from '../../types.ts'
import { HttpError, errorMessage } from '../../errors.ts'
import { processEnv, type EnvLike } from '../../env.ts'
import { taskSecret } from '../../rules.ts'
import { jsonProblem } from '../base/json.ts'
import { checkDelaySeconds, checkIdempotencyKey, checkPriority, checkTriggerOptions, deadlineOption } from '../definitions/options.ts'
import { describe } from '../../describe.ts'
import { tagsFromHeader } from '../definitions/tags.ts'
import { traceHeaders } from '../../telemetry/outgoing.ts'
import type { SendSignalOptions, SentSignal } from '../../types/signals.ts'

/**
 * Request headers that carry `EnqueueOptions` on `POST /__tasks/<name>`; the
 * body stays the payload alone. `Idempotency-Key` is the IETF HTTPAPI
 * draft's header name.
 */
export const ENQUEUE_HEADERS = {
  idempotencyKey: 'idempotency-key',
  delaySeconds: 'svc-delay-seconds',
  priority: 'svc-priority',
  deadline: 'svc-deadline',
  tags: 'svc-tags',
} as const

// A header value holds bytes (Fetch standard): characters up to U+00FF, and
// no NUL, CR or LF. Fetch also strips spaces and tabs around a value, so a
// key with them would arrive as another key.
const HEADER_TEXT = /^(?![ \t])[^\0\r\n\u0100-\uffff]*(?<![ \t])$/

// What enqueue() sends, String(seconds), with a fraction or an exponent
// (0.5, 1e-7); a sign, hexadecimal or Infinity is refused.
const DECIMAL = /^\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/

// What enqueue() sends for a priority, String(n): digits with an optional minus sign.
const INTEGER = /^-?\d{1,4}$/

/**
 * Reads `EnqueueOptions` from request headers, under the same rule as
 * `enqueue()` options; a bad value is a `TypeError` or `RangeError` whose
 * message starts with the header's name.
 */
export function enqueueOptionsFromHeaders(headers: Headers): EnqueueOptions {
  const opts: EnqueueOptions = {}
  const key = headers.get(ENQUEUE_HEADERS.idempotencyKey)
  if (key !== null) {
    checkIdempotencyKey(key, () => 'Header Idempotency-Key')
    opts.idempotencyKey = key
  }
  const delay = headers.get(ENQUEUE_HEADERS.delaySeconds)
  if (delay !== null) {
    const seconds = DECIMAL.test(delay) ? Number(delay) : Number.NaN
    checkDelaySeconds(seconds, () => 'Header Svc-Delay-Seconds', delay)
    opts.delaySeconds = seconds
  }
  const priority = headers.get(ENQUEUE_HEADERS.priority)
  if (priority !== null) {
    const value = INTEGER.test(priority) ? Number(priority) : Number.NaN
    checkPriority(value, () => 'Header Svc-Priority', priority)
    opts.priority = value
  }
  const deadline = headers.get(ENQUEUE_HEADERS.deadline)
  if (deadline !== null) opts.deadline = deadlineOption(deadline, () => 'Header Svc-Deadline')
  const tags = headers.get(ENQUEUE_HEADERS.tags)
  if (tags !== null) opts.tags = tagsFromHeader(tags, () => 'Header Svc-Tags')
  return opts
}

/** Base URL of the task server: `SVC_TASK_URL`, else `http://127.0.0.1:${PORT ?? 3000}`. */
export function taskServerUrl(env: EnvLike = processEnv()): string {
  const base = env.SVC_TASK_URL || `http://127.0.0.1:${env.PORT || 3000}`
  return base.replace(/\/+$/, '')
}

/** How long `enqueue`/`completeToken` wait for the task server's answer. */
export const DEFAULT_TASK_REQUEST_TIMEOUT_MS = 30_000

/** `SVC_TASK_TIMEOUT_MS` when it is a positive number, else the default. */
export function taskRequestTimeout(env: EnvLike = processEnv()): number {
  const raw = env.SVC_TASK_TIMEOUT_MS
  if (raw === undefined || raw === '') return DEFAULT_TASK_REQUEST_TIMEOUT_MS
  const ms = Number(raw)
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new TypeError(`SVC_TASK_TIMEOUT_MS must be a positive number of milliseconds (got ${JSON.stringify(raw)})`)
  }
  return ms
}

/** The `authorization` header of the task secret, or none without one. */
export function authHeaders(env: EnvLike): Record<string, string> {
  const secret = taskSecret(env)
  return secret ? { authorization: `Bearer ${secret}` } : {}
}

/** The authorization and enqueue-option headers of a start sent to the task server; `where` names the caller in errors. */
function enqueueHeaders(
  where: string,
  {
    delaySeconds,
    idempotencyKey,
    priority,
    deadline,
    tags,
  }: { delaySeconds: number; idempotencyKey?: string; priority?: number; deadline?: string; tags?: readonly string[] },
  env: EnvLike,
): Record<string, string> {
  if (idempotencyKey !== undefined && !HEADER_TEXT.test(idempotencyKey)) {
    throw new TypeError(
      `${where}: idempotencyKey must be text an HTTP header can carry (Latin-1, no line breaks, no space or tab at either end) to be sent to the task server (got ${describe(idempotencyKey)})`,
    )
  }
  const headers: Record<string, string> = { ...authHeaders(env) }
  if (idempotencyKey !== undefined) headers[ENQUEUE_HEADERS.idempotencyKey] = idempotencyKey
  if (delaySeconds > 0) headers[ENQUEUE_HEADERS.delaySeconds] = String(delaySeconds)
  if (priority !== undefined) headers[ENQUEUE_HEADERS.priority] = String(priority)
  if (deadline !== undefined) headers[ENQUEUE_HEADERS.deadline] = deadline
  if (tags !== undefined) headers[ENQUEUE_HEADERS.tags] = tags.join(',')
  return headers
}

/** `POST /__tasks/<name>`; maps the 202 `{ id, status }` body to `{ runId, status, ...rest }`. */
export async function enqueueOverHttp(
  taskName: string,
  payload: unknown,
  opts: EnqueueOptions | undefined,
  env: EnvLike = processEnv(),
): Promise<EnqueueResult> {
  const where = `enqueue("${taskName}")`
  const headers = enqueueHeaders(where, checkTriggerOptions(opts, 'enqueue', taskName), env)
  // An empty body means `ctx.input` is undefined (the admin surface's rule).
  const text = payloadText(where, payload)
  if (text !== undefined) headers['content-type'] = 'application/json'
  const url = `${taskServerUrl(env)}/__tasks/${encodeURIComponent(taskName)}`
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text })
  if (!response.ok) throw httpError(response, body)
  if (!isObject(body) || typeof body.id !== 'string' || typeof body.status !== 'string') {
    throw new HttpError(response.status, `${where}: ${url} answered ${response.status} without a { id, status } JSON body`, 'BAD_RESPONSE')
  }
  const { id, status, ...rest } = body
  return { ...rest, runId: id, status } as EnqueueResult
}

/** `POST /__tasks/<name>/batch`; its 202 `{ runs }` body, one `BatchItem` per payload. */
export async function enqueueManyOverHttp(
  taskName: string,
  payloads: readonly unknown[],
  opts: EnqueueOptions | undefined,
  env: EnvLike = processEnv(),
): Promise<BatchItem[]> {
  const where = `enqueueMany("${taskName}")`
  const headers = enqueueHeaders(where, checkTriggerOptions(opts, 'enqueueMany', taskName), env)
  const text = payloadText(where, payloads)
  headers['content-type'] = 'application/json'
  const url = `${taskServerUrl(env)}/__tasks/${encodeURIComponent(taskName)}/batch`
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text })
  if (!response.ok) throw httpError(response, body)
  if (!isObject(body) || !Array.isArray(body.runs) || body.runs.length !== payloads.length) {
    throw new HttpError(
      response.status,
      `${where}: ${url} answered ${response.status} without a { runs } JSON body of one item per payload`,
      'BAD_RESPONSE',
    )
  }
  return body.runs as BatchItem[]
}

/** `POST /__tasks/tokens/<id>`: 200 completed, 404 not found, 409 already completed or timed out. */
export async function completeTokenOverHttp(tokenId: string, payload: unknown, env: EnvLike = processEnv()): Promise<CompleteTokenResult> {
  const where = `completeToken("${tokenId}")`
  const url = `${taskServerUrl(env)}/__tasks/tokens/${encodeURIComponent(tokenId)}`
  const text = payloadText(where, payload)
  const headers: Record<string, string> = { ...authHeaders(env) }
  if (text !== undefined) headers['content-type'] = 'application/json'
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text })
  if (response.ok) return 'completed'
  const code = isObject(body) ? body.code : undefined
  const status = isObject(body) ? body.status : undefined
  // Only the task server's answers about the token are results. Any other
  // 404 or 409 (a wrong SVC_TASK_URL, a proxy) is an error, never swallowed.
  if (response.status === 404 && code === 'TOKEN_NOT_FOUND') return 'not_found'
  if (response.status === 409) {
    if (code === 'RUN_CANCELLED') return 'run_cancelled'
    if (code === 'TOKEN_TIMED_OUT' || status === 'timed_out') return 'timed_out'
    if (code === 'TOKEN_ALREADY_COMPLETED' || status === 'already_completed') return 'already_completed'
  }
  throw httpError(response, body)
}

/** `POST /__tasks/runs/<id>/signals/<name>`: 202 `{ id, runId, name, duplicate }`; any other answer is an `HttpError` with its code. */
export async function sendSignalOverHttp(
  runId: string,
  name: string,
  data: unknown,
  options: SendSignalOptions | undefined,
  env: EnvLike = processEnv(),
): Promise<SentSignal> {
  const where = `sendSignal(${JSON.stringify(runId)}, ${JSON.stringify(name)})`
  const url = `${taskServerUrl(env)}/__tasks/runs/${encodeURIComponent(runId)}/signals/${encodeURIComponent(name)}`
  const text = payloadText(where, data)
  const headers: Record<string, string> = { ...authHeaders(env) }
  if (text !== undefined) headers['content-type'] = 'application/json'
  if (options?.id !== undefined) headers['idempotency-key'] = options.id
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text })
  if (!response.ok) throw httpError(response, body)
  if (!isObject(body) || typeof body.id !== 'string') {
    throw new HttpError(
      response.status,
      `${where}: ${url} answered ${response.status} without a { id, runId, name, duplicate } JSON body`,
      'BAD_RESPONSE',
    )
  }
  return body as unknown as SentSignal
}

/** `POST /__tasks/runs/<id>/cancel`: 200 `{ id, status: 'cancelled', cancelledWith }`; any other answer is an `HttpError` with its code. */
export async function cancelRunOverHttp(
  runId: string,
  env: EnvLike = processEnv(),
  children: NonNullable<CancelOptions['children']> = 'waited',
  compensate = false,
): Promise<CancelRunResult> {
  const where = `cancelRun("${runId}")`
  const query = new URLSearchParams()
  if (children !== 'waited') query.set('children', children)
  if (compensate) query.set('compensate', 'true')
  const url = `${taskServerUrl(env)}/__tasks/runs/${encodeURIComponent(runId)}/cancel${query.size === 0 ? '' : `?${query}`}`
  const { response, body } = await send(where, url, env, { method: 'POST', headers: authHeaders(env) })
  if (!response.ok) throw httpError(response, body)
  if (!isObject(body) || (body.status !== 'cancelled' && body.status !== 'running')) {
    throw new HttpError(
      response.status,
      `${where}: ${url} answered ${response.status} without a { id, status: 'cancelled' } JSON body`,
      'BAD_RESPONSE',
    )
  }
  // A server of an earlier release answers without the children it cancelled.
  const cancelledWith = Array.isArray(body.cancelledWith) ? body.cancelledWith.filter((id): id is string => typeof id === 'string') : []
  if (body.status === 'running' && isObject(body.compensation)) {
    return { id: runId, status: 'running', cancelledWith, compensation: body.compensation as unknown as RunCompensation }
  }
  return { id: runId, status: 'cancelled', cancelledWith }
}

/** `POST /__events`: 202 `{ events }`; any other answer is an `HttpError` with its code. */
export async function sendEventsOverHttp(events: readonly EventInput[], where: string, env: EnvLike = processEnv()): Promise<SentEvent[]> {
  const url = `${taskServerUrl(env)}/__events`
  const text = payloadText(where, events)
  const headers = { ...authHeaders(env), 'content-type': 'application/json' }
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text })
  if (!response.ok) throw httpError(response, body)
  if (!isObject(body) || !Array.isArray(body.events)) {
    throw new HttpError(response.status, `${where}: ${url} answered ${response.status} without an { events } JSON body`, 'BAD_RESPONSE')
  }
  return body.events as SentEvent[]
}

/**
 * The JSON text of a payload, checked as the task server checks what it
 * stores, so a value it would refuse is the caller's `TypeError` before
 * anything is sent.
 */
export function payloadText(where: string, payload: unknown): string | undefined {
  if (payload === undefined) return undefined
  const problem = jsonProblem(payload)
  if (problem !== undefined) throw new TypeError(`${where}: the payload cannot be stored as JSON: ${problem}`)
  return JSON.stringify(payload)
}

/**
 * Sends `init` to `url` and reads the answer; gives up after `timeoutMs`
 * (`SVC_TASK_TIMEOUT_MS` unless the caller waits longer on purpose, as
 * `updateRun` does for its answer).
 */
export async function send(
  where: string,
  url: string,
  env: EnvLike,
  init: RequestInit & { headers: Record<string, string> },
  timeoutMs: number = taskRequestTimeout(env),
): Promise<{ response: Response; body: unknown }> {
  const headers = { ...init.headers, ...(await traceHeaders(env)) }
  // Built outside the try: a request that cannot be built (a bad URL or
  // header) is a configuration error, not a failure to reach the server.
  // Redirects are not followed: 301-303 would turn the POST into a GET.
  let request: Request
  try {
    request = new Request(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) })
  } catch (cause) {
    throw new TypeError(`${where}: cannot build a request to ${url}: ${errorMessage(cause)}`, { cause })
  }
  // `host:port` without a scheme parses as a URL whose scheme is the host.
  if (!/^https?:$/.test(new URL(request.url).protocol)) {
    throw new TypeError(
      `${where}: cannot build a request to ${url}: the task server URL (SVC_TASK_URL) must start with http:// or https://`,
    )
  }
  let answer: TaskServerAnswer
  try {
    answer = await fetchAnswer(request)
  } catch (cause) {
    if ((cause as Error)?.name === 'TimeoutError') {
      const error = new HttpError(
        0,
        `${where}: ${url} did not answer within ${timeoutMs} ms (SVC_TASK_TIMEOUT_MS); the run may or may not have started, so retry with an idempotencyKey`,
        'TIMEOUT',
      )
      error.cause = cause
      throw error
    }
    // Status 0 means "no HTTP answer at all", as in the Fetch standard's network error.
    const error = new HttpError(
      0,
      `${where}: could not reach ${url}: ${errorMessage(cause)}. Is the task server running? Set SVC_TASK_URL to its address`,
      'NETWORK_ERROR',
    )
    error.cause = cause
    throw error
  }
  // Not JSON: the text, for the error message.
  return { response: answer.response, body: answer.json === undefined ? answer.text : answer.json }
}

/** A task server's answer: the response, its text, and that text parsed when it is JSON. */
export interface TaskServerAnswer {
  response: Response
  text: string
  json: unknown
}

/**
 * Sends `request` and reads its answer whole. Rejects as `fetch` does (no
 * answer, or `request`'s signal aborted it): each caller says what that
 * means for it.
 */
export async function fetchAnswer(request: Request): Promise<TaskServerAnswer> {
  const response = await fetch(request)
  const text = await response.text()
  let json: unknown
  if (text) {
    try {
      json = JSON.parse(text)
    } catch {
      // Not JSON: `text` is what there is.
    }
  }
  return { response, text, json }
}

/** The answer's error text (`error`, else `message`, else the raw text) and code. */
export function httpError(response: Response, body: unknown): HttpError {
  const text =
    isObject(body) && typeof body.error === 'string'
      ? body.error
      : isObject(body) && typeof body.message === 'string'
        ? body.message
        : typeof body === 'string' && body
          ? body.slice(0, 500)
          : `HTTP ${response.status} ${response.statusText}`.trim()
  const code = isObject(body) && typeof body.code === 'string' ? body.code : 'HTTP_ERROR'
  return new HttpError(response.status, text, code)
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
