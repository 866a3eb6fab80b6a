/**
 * The HTTP side of `updateRun()`, used when no task runtime is active in
 * this process: `POST /__tasks/runs/<id>/updates/<name>` on the task
 * server, held until the run answers. Its refusals are rebuilt as the
 * errors the in-process call throws, so a caller catches the same classes
 * either way.
 */
import { HttpError, RunFinishedError, RunNotFoundError, type SvcError, ValidationError } from '../../errors.ts'
import { processEnv, type EnvLike } from '../../env.ts'
import type { UpdateRunOptions } from '../../types/updates.ts'
import type { ValidationIssue } from '../../types/schema.ts'
import { TooManyUpdatesError, UpdateFailedError, UpdateNotHandledError, UpdateTimeoutError } from '../../update-errors.ts'
import { DEFAULT_UPDATE_TIMEOUT_SECONDS } from '../engine/update-sends.ts'
import { MAX_PENDING_UPDATES } from '../store/update-records.ts'
import { authHeaders, httpError, isObject, payloadText, send, taskRequestTimeout, taskServerUrl } from './client.ts'

/**
 * How much longer than the update's own timeout the request may take: the
 * server answers 202 `pending` once that timeout passes, and this leaves
 * time for that answer to travel.
 */
export const UPDATE_REQUEST_MARGIN_MS = 10_000

// What an HTTP header can carry as it was given (Fetch standard): Latin-1,
// no line breaks, and no space or tab at either end, which fetch strips.
const HEADER_TEXT = /^(?![ \t])[^\0\r\n\u0100-\uffff]*(?<![ \t])$/

/**
 * `POST /__tasks/runs/<id>/updates/<name>` with the update's id as
 * `Idempotency-Key` (a random one when `options.id` is absent, so the id
 * of a 202 is known) and `timeoutSeconds` as `?timeout=`: 200 resolves
 * to the handler's result; 202 `pending` is an `UpdateTimeoutError`; the
 * refusals are the in-process errors (`UpdateFailedError`,
 * `UpdateNotHandledError`, `TooManyUpdatesError`, `ValidationError`,
 * `RunNotFoundError`, `RunFinishedError`), anything else an `HttpError`
 * with its status and code.
 */
export async function updateRunOverHttp(
  runId: string,
  name: string,
  data: unknown,
  options: UpdateRunOptions | undefined,
  env: EnvLike = processEnv(),
): Promise<unknown> {
  const where = `updateRun(${JSON.stringify(runId)}, ${JSON.stringify(name)})`
  const id = options?.id ?? crypto.randomUUID()
  if (!HEADER_TEXT.test(id)) {
    throw new TypeError(
      `${where}: id must be text an HTTP header can carry (Latin-1, no line breaks, no space or tab at either end) to be sent to the task server (got ${JSON.stringify(id)})`,
    )
  }
  const seconds = options?.timeoutSeconds
  const query = seconds === undefined ? '' : `?timeout=${seconds}`
  const url = `${taskServerUrl(env)}/__tasks/runs/${encodeURIComponent(runId)}/updates/${encodeURIComponent(name)}${query}`
  const text = payloadText(where, data)
  const headers: Record<string, string> = { ...authHeaders(env), 'idempotency-key': id }
  if (text !== undefined) headers['content-type'] = 'application/json'
  // The server holds the request up to the update's timeout: the request's own must be longer.
  const waitMs = (seconds ?? DEFAULT_UPDATE_TIMEOUT_SECONDS) * 1000 + UPDATE_REQUEST_MARGIN_MS
  const timeoutMs = Math.max(taskRequestTimeout(env), waitMs)
  const { response, body } = await send(where, url, env, { method: 'POST', headers, body: text }, timeoutMs)
  if (response.status === 200 && isObject(body) && body.status === 'completed') return body.result
  if (response.status === 202 && isObject(body) && body.status === 'pending') {
    const error = new UpdateTimeoutError(runId, typeof body.id === 'string' ? body.id : id, name, seconds ?? DEFAULT_UPDATE_TIMEOUT_SECONDS)
    if (typeof body.error === 'string') error.message = body.error
    throw error
  }
  if (response.ok) {
    throw new HttpError(
      response.status,
      `${where}: ${url} answered ${response.status} without a { id, runId, name, status: 'completed' | 'pending' } JSON body`,
      'BAD_RESPONSE',
    )
  }
  throw updateError(response, body, runId, id, name)
}

/** The in-process error a refusal stands for, with the server's message; else an `HttpError`. */
function updateError(response: Response, body: unknown, runId: string, id: string, name: string): SvcError {
  const fallback = httpError(response, body)
  const { status } = response
  const code = fallback.code
  const message = fallback.message
  let error: SvcError
  if (status === 422 && code === 'UPDATE_FAILED') error = new UpdateFailedError(runId, id, name, message)
  else if (status === 404 && code === 'UPDATE_NOT_HANDLED') error = new UpdateNotHandledError(runId, message)
  else if (status === 404 && code === 'RUN_NOT_FOUND') error = new RunNotFoundError(runId)
  else if (status === 429 && code === 'TOO_MANY_UPDATES') error = new TooManyUpdatesError(runId, MAX_PENDING_UPDATES)
  else if (status === 409 && code === 'RUN_FINISHED') error = new RunFinishedError(runId, runStatusIn(message), 'updated')
  else if (status === 400 && code === 'VALIDATION_FAILED') {
    const details = isObject(body) && Array.isArray(body.details) ? (body.details as ValidationIssue[]) : []
    return new ValidationError(details, message)
  } else return fallback
  // The server's own words: the same text the in-process call's error has.
  error.message = message
  return error
}

/** The status a `RUN_FINISHED` message names ("already finished (completed)"), else `finished`. */
function runStatusIn(message: string): string {
  return /finished \((\w+)\)/.exec(message)?.[1] ?? 'finished'
}
