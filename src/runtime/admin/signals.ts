/**
 * Signals over HTTP (docs/tasks.md "Signals"), once the request is let in:
 * a signal is sent with the task secret or a run token that allows it
 * (`signal-endpoint.ts`), the list read with the secret only:
 *
 * | Method | Path | Body | Answer |
 * |--------|------|------|--------|
 * | POST | `/__tasks/runs/<id>/signals/<name>` | the signal's data (empty: none) | 202 `{ id, runId, name, duplicate }`; the `Idempotency-Key` header is the signal's id |
 * | GET  | `/__tasks/runs/<id>/signals` | | 200 `{ signals }`, oldest first |
 *
 * A bad name or id is 400 `INVALID_SIGNAL`; an unknown run 404
 * `RUN_NOT_FOUND`; a finished one 409 `RUN_FINISHED`; a run holding as many
 * signals as no wait took as it may 429 `TOO_MANY_SIGNALS`, with
 * `Retry-After`. Nothing is kept on any of them.
 */
import type { TaskRuntime } from '../types.ts'
import { jsonError, methodNotAllowed } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { readJsonBody } from '../http/body.ts'
import { signalProblem } from '../events/rules.ts'

export interface SignalRoutes {
  runtime: TaskRuntime
  R: ResponseClass
  bodyLimit: number
  json(status: number, body: unknown): Response
}

/** `POST /__tasks/runs/<id>/signals/<name>`. */
export async function sendSignalRoute(
  routes: SignalRoutes,
  request: Request,
  pathname: string,
  runId: string,
  name: string,
): Promise<Response> {
  const { runtime, R, bodyLimit, json } = routes
  if (request.method !== 'POST') return methodNotAllowed(R, request.method, pathname, 'POST, OPTIONS')
  const id = messageId(request, name, signalProblem, 'INVALID_SIGNAL', R)
  if (id instanceof Response) return id
  const { value } = await readJsonBody(request, bodyLimit)
  return json(202, await runtime.sendSignal(runId, name, value, id === undefined ? undefined : { id }))
}

/**
 * The id of a message to a run (a signal, an update): its `Idempotency-Key`
 * header, or `undefined`; a 400 `code` response when `problemOf` finds the
 * name or the id wrong.
 */
export function messageId(
  request: Request,
  name: string,
  problemOf: (name: string, id: string | undefined) => string | null,
  code: string,
  R: ResponseClass,
): string | undefined | Response {
  const id = request.headers.get('idempotency-key') ?? undefined
  const problem = problemOf(name, id)
  if (problem) return jsonError(R, 400, code, `${problem}${id === undefined ? '' : ' (the Idempotency-Key header is the id)'}`)
  return id
}

/** `GET /__tasks/runs/<id>/signals`. */
export async function listSignalsRoute(routes: SignalRoutes, runId: string): Promise<Response> {
  const { runtime, R, json } = routes
  if (!(await runtime.getRun(runId))) return jsonError(R, 404, 'RUN_NOT_FOUND', `No run has id "${runId}"`)
  return json(200, { signals: await runtime.listSignals(runId) })
}
