/**
 * The admin endpoints of a task server (`/__tasks/…`, docs/http-api.md) as
 * `svc runs`, `svc schedules` and `svc tasks fire` call them. The server is found as
 * `enqueue()` finds it (`SVC_TASK_URL`, else port `PORT` on this machine)
 * and the secret sent as it sends it. Every failure is an `Error` whose
 * message names the URL and what it answered, for `main` to print.
 */
import { type EnvLike, processEnv } from '../runtime/env.ts'
import { errorMessage } from '../runtime/errors.ts'
import { taskSecret } from '../runtime/rules.ts'
import {
  authHeaders,
  fetchAnswer,
  isObject,
  type TaskServerAnswer,
  taskRequestTimeout,
  taskServerUrl,
} from '../runtime/tasks/client/client.ts'
import { UsageError } from './_errors.ts'

export interface RunsClient {
  /** The server's base URL, without a trailing slash. */
  readonly base: string
  /** `GET <base><path>`, resolving with the JSON body of a 2xx answer. */
  get<T>(path: string, query?: URLSearchParams): Promise<T>
  /** `POST <base><path>`, with `body` as JSON if given (and `extra` headers), resolving with the JSON body of a 2xx answer. */
  post<T>(path: string, body?: unknown, extra?: Record<string, string>): Promise<T>
  /** `PATCH <base><path>` with `body` as JSON, resolving with the JSON body of a 2xx answer. */
  patch<T>(path: string, body: unknown): Promise<T>
  /** `DELETE <base><path>`, resolving with the JSON body of a 2xx answer. */
  delete<T>(path: string): Promise<T>
}

/**
 * A client for the server at `url` (the `--url` flag), else the one the
 * environment names. `where` starts every error message (`svc runs get`).
 */
export function runsClient(where: string, url: string | undefined, env: EnvLike = processEnv()): RunsClient {
  const base = taskServerUrl(url === undefined ? env : { ...env, SVC_TASK_URL: url })
  // `host:port` without a scheme parses as a URL whose scheme is the host.
  if (!/^https?:\/\/[^/]/.test(base)) {
    const rule = "must be the server's address, starting with http:// or https://"
    if (url !== undefined) throw new UsageError(`--url (got ${JSON.stringify(url)}) ${rule}`)
    throw new Error(`${where}: SVC_TASK_URL (got ${JSON.stringify(env.SVC_TASK_URL)}) ${rule}`)
  }
  const secret = taskSecret(env)
  const timeoutMs = taskRequestTimeout(env)
  const headers = authHeaders(env)

  async function call<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    query?: URLSearchParams,
    payload?: unknown,
    extra: Record<string, string> = {},
  ): Promise<T> {
    const search = query?.size ? `?${query}` : ''
    const target = `${base}${path}${search}`
    const sentBody = payload === undefined ? undefined : JSON.stringify(payload)
    const sent = sentBody === undefined ? { ...headers, ...extra } : { ...headers, ...extra, 'content-type': 'application/json' }
    let answer: TaskServerAnswer
    try {
      // Redirects are not followed: 301-303 would turn a POST into a GET.
      answer = await fetchAnswer(
        new Request(target, { method, headers: sent, body: sentBody, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) }),
      )
    } catch (cause) {
      if ((cause as Error)?.name === 'TimeoutError') {
        throw new Error(`${where}: ${target} did not answer within ${timeoutMs} ms (SVC_TASK_TIMEOUT_MS)`, { cause })
      }
      throw new Error(
        `${where}: could not reach ${target}: ${networkProblem(cause)}. Is the svc server running? Set SVC_TASK_URL (or --url) to its address`,
        { cause },
      )
    }
    const { response, text, json: body } = answer
    if (!response.ok) {
      throw new Error(`${where}: ${target} answered ${response.status} ${answerText(response, body, text)}${hint(response.status, secret)}`)
    }
    if (body === undefined) {
      throw new Error(
        `${where}: ${target} answered ${response.status} without a JSON body; is it the svc server? Set SVC_TASK_URL (or --url) to its address`,
      )
    }
    return body as T
  }

  return {
    base,
    get: (path, query) => call('GET', path, query),
    post: (path, body, extra) => call('POST', path, undefined, body, extra),
    patch: (path, body) => call('PATCH', path, undefined, body),
    delete: (path) => call('DELETE', path),
  }
}

/** `CODE: message` of an error body (`{ error, code }`), else its status text or the start of its text. */
function answerText(response: Response, body: unknown, text: string): string {
  if (isObject(body) && typeof body.code === 'string') return typeof body.error === 'string' ? `${body.code}: ${body.error}` : body.code
  const snippet = text.trim().slice(0, 200)
  return snippet ? `${response.statusText || 'error'}: ${snippet}` : response.statusText || 'with no body'
}

/** What to do about an answer the server refused, when the status says. */
function hint(status: number, secret: string | undefined): string {
  if (status !== 401) return ''
  return secret === undefined
    ? '. The task secret is missing: set SVC_TASK_SECRET to the secret the server has'
    : '. The task secret is wrong: set SVC_TASK_SECRET to the secret the server has'
}

/** Why a request got no answer: fetch's own message is "fetch failed", with the reason as its cause. */
function networkProblem(error: unknown): string {
  const cause = (error as { cause?: unknown })?.cause
  return errorMessage(cause instanceof Error ? cause : error)
}
