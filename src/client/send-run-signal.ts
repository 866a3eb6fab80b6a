/**
 * `sendRunSignal()`: a page sends a signal to one run on the task server
 * (`POST /__tasks/runs/<id>/signals/<name>`, docs/realtime.md), with a run
 * token that allows it (`createRunToken(runId, { signals })`). Browser code
 * with no dependency: one `fetch`, the token in `Authorization`, never in
 * a URL a log keeps, and the data as JSON.
 *
 * It does not try again on its own: a signal sent twice is two signals,
 * unless both carry one `id`, which the server keeps once. Give an `id` to
 * a signal the page may send again after a failure.
 */
import type { SentSignal } from '../runtime/types/signals.ts'

export interface SendRunSignalOptions {
  /**
   * A run token from `createRunToken(runId, { signals })` on the app's
   * server that allows this signal, or a function that returns one.
   */
  token: string | (() => string | Promise<string>)
  /**
   * The signal's id, unique within its run, sent as `Idempotency-Key`.
   * Note: sending an id again is sending the same signal, kept once and
   * answered with `duplicate: true`.
   * @default a random UUID, chosen by the server
   */
  id?: string
  /** Aborting it abandons the request; the promise rejects with the abort reason. */
  signal?: AbortSignal
}

/** Why a signal was not sent: the HTTP status (0 when no answer was read) and the server's `code`. */
export class RunSignalError extends Error {
  readonly status: number
  readonly code: string

  constructor(status: number, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RunSignalError'
    this.status = status
    this.code = code
  }
}

/**
 * Sends the signal `name`, with `data` (any JSON value, or `undefined` for
 * none), to run `runId` on the task server at `server`, such as
 * `https://tasks.example.com` (`''` for the page's own origin). Resolves
 * to `{ id, runId, name, duplicate }` once the run holds it. Throws a
 * `TypeError` for a bad argument; rejects with a `RunSignalError` when the
 * server refuses it (`code` as the server says: `RUN_TOKEN_NOT_ALLOWED`,
 * `RUN_FINISHED`, `TOO_MANY_SIGNALS`, …), or when no answer came
 * (`NETWORK_ERROR`, status 0).
 */
export async function sendRunSignal(
  server: string | URL,
  runId: string,
  name: string,
  data: unknown,
  options: SendRunSignalOptions,
): Promise<SentSignal> {
  const where = 'sendRunSignal()'
  if (typeof server !== 'string' && !(server instanceof URL)) {
    throw new TypeError(`${where}: server must be the task server's URL, such as https://tasks.example.com (got ${typeof server})`)
  }
  if (typeof runId !== 'string' || runId === '') throw new TypeError(`${where}: runId must be a run id (got ${typeof runId})`)
  if (typeof name !== 'string' || name === '')
    throw new TypeError(`${where}: name must be a signal name such as 'message' (got ${typeof name})`)
  if (options === null || typeof options !== 'object') throw new TypeError(`${where}: options must be an object with token`)
  const { token, id, signal } = options
  if (typeof token !== 'function' && (typeof token !== 'string' || token === '')) {
    throw new TypeError(
      `${where}: token must be a run token from createRunToken(runId, { signals }), or a function that returns one (got ${typeof token})`,
    )
  }
  if (id !== undefined && (typeof id !== 'string' || id === ''))
    throw new TypeError(`${where}: id must be a non-empty string (got ${typeof id})`)
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`${where}: signal must be an AbortSignal`)
  const body = data === undefined ? undefined : JSON.stringify(data)
  if (data !== undefined && body === undefined) throw new TypeError(`${where}: data must be a JSON value (got ${typeof data})`)

  const headers: Record<string, string> = { authorization: `Bearer ${await tokenOf(token)}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (id !== undefined) headers['idempotency-key'] = id
  const base = String(server).replace(/\/+$/, '')
  const url = `${base}/__tasks/runs/${encodeURIComponent(runId)}/signals/${encodeURIComponent(name)}`
  let response: Response
  try {
    response = await fetch(url, { method: 'POST', headers, body, cache: 'no-store', signal })
  } catch (cause) {
    if (signal?.aborted) throw signal.reason
    throw new RunSignalError(0, 'NETWORK_ERROR', `${where}: no answer from ${url}: ${(cause as Error)?.message ?? cause}`, { cause })
  }
  const text = await response.text().catch(() => '')
  let answer: Record<string, unknown> | undefined
  try {
    answer = JSON.parse(text)
  } catch {
    answer = undefined
  }
  if (!response.ok) {
    const message = typeof answer?.error === 'string' ? answer.error : text.slice(0, 200) || `HTTP ${response.status}`
    throw new RunSignalError(response.status, typeof answer?.code === 'string' ? answer.code : 'HTTP_ERROR', message)
  }
  if (answer === undefined || typeof answer.id !== 'string') {
    throw new RunSignalError(response.status, 'BAD_RESPONSE', `${url} answered ${response.status} without the signal it kept`)
  }
  return answer as unknown as SentSignal
}

async function tokenOf(token: SendRunSignalOptions['token']): Promise<string> {
  if (typeof token === 'string') return token
  let value: unknown
  try {
    value = await token()
  } catch (cause) {
    throw new RunSignalError(0, 'TOKEN_FAILED', `sendRunSignal(): the token function threw: ${(cause as Error)?.message ?? cause}`, {
      cause,
    })
  }
  if (typeof value !== 'string' || value === '') {
    throw new RunSignalError(0, 'TOKEN_FAILED', `sendRunSignal(): the token function must return a run token (got ${typeof value})`)
  }
  return value
}
