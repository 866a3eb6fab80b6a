/**
 * Updates over HTTP (docs/tasks.md "Updates"), with the task secret:
 *
 * | Method | Path | Body | Answer |
 * |--------|------|------|--------|
 * | POST | `/__tasks/runs/<id>/updates/<name>` | the update's data (empty: none) | 200 `{ id, runId, name, status: 'completed', result }` once the run answers; 202 `{ …, status: 'pending' }` past `?timeout=` seconds (default 30, at most 300) |
 * | GET  | `/__tasks/runs/<id>/updates` | | 200 `{ updates }`, oldest first |
 *
 * The request is held until the run answers. The `Idempotency-Key` header
 * is the update's id: a request again with it gets the same answer, and
 * the handler runs once. Data that fails the handler's schema is 400
 * `VALIDATION_FAILED`; a handler that threw 422 `UPDATE_FAILED`; a run
 * with no handler of the name 404 `UPDATE_NOT_HANDLED`; an unknown run
 * 404 `RUN_NOT_FOUND`, a finished one 409 `RUN_FINISHED`; a run holding as
 * many unanswered updates as it may 429 `TOO_MANY_UPDATES`; a bad name,
 * id or timeout 400 `INVALID_UPDATE`.
 */
import { messageId, type SignalRoutes } from './signals.ts'
import { jsonError, methodNotAllowed } from '../http/errors.ts'
import { readJsonBody } from '../http/body.ts'
import { updateProblem } from '../events/rules.ts'
import { UpdateTimeoutError } from '../update-errors.ts'
import { SvcError } from '../errors.ts'
import { MAX_UPDATE_TIMEOUT_SECONDS, timeoutSecondsOf } from '../tasks/engine/update-sends.ts'

/** What the routes work with: those of signals (signals.ts). */
export type UpdateRoutes = SignalRoutes

/** `POST /__tasks/runs/<id>/updates/<name>`. */
export async function updateRunRoute(
  routes: UpdateRoutes,
  request: Request,
  pathname: string,
  runId: string,
  name: string,
): Promise<Response> {
  const { runtime, R, bodyLimit, json } = routes
  if (request.method !== 'POST') return methodNotAllowed(R, request.method, pathname, 'POST')
  const id = messageId(request, name, updateProblem, 'INVALID_UPDATE', R)
  if (id instanceof Response) return id
  const timeout = new URL(request.url).searchParams.get('timeout')
  const timeoutSeconds = timeout === null ? undefined : timeoutSecondsOf(timeout)
  if (timeout !== null && timeoutSeconds === undefined) {
    return jsonError(
      R,
      400,
      'INVALID_UPDATE',
      `?timeout= is a number of seconds above 0 and at most ${MAX_UPDATE_TIMEOUT_SECONDS} (got ${JSON.stringify(timeout)})`,
    )
  }
  const { value } = await readJsonBody(request, bodyLimit)
  const updateId = id ?? crypto.randomUUID()
  try {
    const result = await runtime.updateRun(runId, name, value, {
      id: updateId,
      ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
    })
    const body: Record<string, unknown> = { id: updateId, runId, name, status: 'completed' }
    if (result !== undefined) body.result = result
    return json(200, body)
  } catch (error) {
    // By its code as well: an error rebuilt after crossing a boundary (a Durable Object's RPC) may not be the class.
    if (error instanceof UpdateTimeoutError || (error instanceof SvcError && error.code === 'UPDATE_PENDING'))
      return json(202, { id: updateId, runId, name, status: 'pending', error: error.message })
    throw error
  }
}

/** `GET /__tasks/runs/<id>/updates`. */
export async function listUpdatesRoute(routes: UpdateRoutes, runId: string): Promise<Response> {
  const { runtime, R, json } = routes
  if (!(await runtime.getRun(runId))) return jsonError(R, 404, 'RUN_NOT_FOUND', `No run has id "${runId}"`)
  return json(200, { updates: await runtime.listUpdates(runId) })
}
