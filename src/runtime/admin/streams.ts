/**
 * The event streams of the admin surface, `GET /__tasks/events` and
 * `GET /__tasks/runs/<id>/stream`, as every host sees them: their options,
 * the part that serves them, and what a host without it answers there. The
 * part comes whole in `EVENT_STREAMS` (`event-streams.ts`), which only the
 * hosts that stream import (`createSvcHandler`), so that the Cloudflare
 * worker, whose runs change in the Durable Object, carries none of it.
 * Edge-safe.
 */
import type { Logger, RequestInfo, TaskRuntime } from '../types.ts'
import type { EnvLike } from '../env.ts'
import { describe } from '../describe.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import type { LoopbackExemption } from './auth.ts'
import { type AllowedOrigins, allowedOrigins, corsHeaders, isOriginEntry, preflight, RUN_STREAM_CORS } from './cors.ts'

/** Limits of the event streams: `GET /__tasks/events` and `GET /__tasks/runs/<id>/stream`. */
export interface RunEventsOptions {
  /**
   * Most event streams open at once on one task runtime (so in one
   * process, where the server owns the runtime), run-change streams and
   * streams of one run together. One more gets 503
   * `TOO_MANY_EVENT_STREAMS` with `Retry-After`. Note: streams opened with
   * a run token may take all but an eighth of them (at least one), which
   * are kept for streams opened with the task secret (the dashboard,
   * `GET /__tasks/events`).
   * @default 64
   */
  maxStreams?: number
  /**
   * Most streams one run token may hold open at once (a browser tab holds
   * one). One more gets 429 `TOO_MANY_EVENT_STREAMS` with `Retry-After`.
   * @default 4
   */
  maxStreamsPerToken?: number
  /**
   * Most streams opened with run tokens that one client address may hold
   * open at once, on hosts that know the peer's address (Node, Bun, Deno).
   * One more gets 429 `TOO_MANY_EVENT_STREAMS` with `Retry-After`. Note:
   * clients behind one proxy share an address.
   * @default 16
   */
  maxStreamsPerAddress?: number
  /**
   * Most bytes of events that may wait for one client that is not reading.
   * Past this the stream is dropped (its connection cut) and stops listening
   * to the runtime. Note: the host's socket buffers take some bytes before
   * they count here, and one event larger than this is let through alone.
   * @default 262144 (256 KiB)
   */
  maxQueuedBytes?: number
  /**
   * Origins whose pages may read a run's stream
   * (`GET /__tasks/runs/<id>/stream`) and send it signals
   * (`POST /__tasks/runs/<id>/signals/<name>`) from another origin, such as
   * `['https://app.example.com']`; `['*']` allows every origin. Note: they
   * still need a run token (`createRunToken`) or the task secret; this only
   * lets the browser send the request and hand them the answer (CORS).
   * @default the origins of SVC_REALTIME_ORIGINS, separated by commas; none without it
   */
  origins?: readonly string[]
}

/** Throws a `TypeError` or `RangeError` naming the field when `value` is not a `RunEventsOptions`. */
export function checkRunEvents(value: unknown, where: string): void {
  if (value === undefined) return
  if (value === null || typeof value !== 'object') {
    throw new TypeError(
      `${where}: runEvents must be an object with maxStreams, maxStreamsPerToken, maxStreamsPerAddress, maxQueuedBytes and origins (got ${describe(value)})`,
    )
  }
  const { maxStreams, maxStreamsPerToken, maxStreamsPerAddress, maxQueuedBytes, origins } = value as Record<string, unknown>
  for (const [field, count] of Object.entries({ maxStreams, maxStreamsPerToken, maxStreamsPerAddress })) {
    if (count !== undefined && !(Number.isInteger(count) && (count as number) > 0)) {
      throw new RangeError(`${where}: runEvents.${field} must be a positive whole number (got ${describe(count)})`)
    }
  }
  if (maxQueuedBytes !== undefined && !(Number.isInteger(maxQueuedBytes) && (maxQueuedBytes as number) > 0)) {
    throw new RangeError(`${where}: runEvents.maxQueuedBytes must be a positive whole number of bytes (got ${describe(maxQueuedBytes)})`)
  }
  if (origins !== undefined && !Array.isArray(origins)) {
    throw new TypeError(
      `${where}: runEvents.origins must be an array of origins such as ['https://app.example.com'] (got ${describe(origins)})`,
    )
  }
  const bad = (origins as unknown[] | undefined)?.find((entry) => !isOriginEntry(entry))
  if (bad !== undefined) {
    throw new TypeError(
      `${where}: runEvents.origins entries must be http(s) origins such as 'https://app.example.com', or '*' for every origin (got ${describe(bad)})`,
    )
  }
}

/** What the streams of one admin surface are built from. */
export interface StreamsOptions {
  runtime: TaskRuntime
  env: EnvLike
  R: ResponseClass
  logger: Logger
  dev: boolean
  runEvents?: RunEventsOptions
  /** The development exemption of the admin auth, on hosts that report peer addresses. */
  loopback?: LoopbackExemption
}

/** Answers the stream of run `runId`, authorizing the request itself (a run token, or the admin auth). */
export type RunStreamHandler = (request: Request, runId: string, info?: RequestInfo) => Promise<Response>

/** The streams of one admin surface. */
export interface AdminStreams {
  /** `GET /__tasks/events`, once the admin auth has let the request in. */
  events(): Response
  /** `/__tasks/runs/<id>/stream` and `/__tasks/<id>/stream`, whatever the method. */
  run: RunStreamHandler
}

/** The part that serves the streams (`EVENT_STREAMS` from `event-streams.ts`). */
export interface EventStreams {
  create(options: StreamsOptions): AdminStreams
}

/** Why a runtime's streams cannot be served: its runs change in another place. */
export const RUNS_ELSEWHERE =
  'This target runs tasks in another place (the SvcTasks Durable Object on Workers), whose run changes cannot be streamed from here'

/**
 * 501 `NOT_IMPLEMENTED`, saying `why`, for a stream that is not served here:
 * the stream of run `runId`, or of every run change without one.
 */
export function notStreamed(R: ResponseClass, why: string, runId?: string, headers?: Record<string, string>): Response {
  return jsonError(R, 501, 'NOT_IMPLEMENTED', `${why}; poll GET /__tasks/runs${runId === undefined ? '' : `/${runId}`} instead`, headers)
}

const METHODS = RUN_STREAM_CORS.methods

/** The SSE id of the last event of a run's stream, the one of a finished run. */
export const DONE = 'done'

/**
 * What a run's stream answers before it reads any credential: the CORS
 * preflight (`cors.ts`), 405 for a method other than GET and HEAD, and 204
 * for an `EventSource` that saw the run finish (`Last-Event-ID: done`),
 * which tells it not to connect again (WHATWG HTML, "Server-sent events").
 * `undefined` when the request goes on.
 */
export function runStreamPreamble(
  request: Request,
  allowed: AllowedOrigins,
  R: ResponseClass,
  cors: Record<string, string>,
): Response | undefined {
  const method = request.method
  if (method === 'OPTIONS') return preflight(request, allowed, R, RUN_STREAM_CORS)
  if (method !== 'GET' && method !== 'HEAD') {
    return jsonError(R, 405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on a run's stream; allowed: ${METHODS}, OPTIONS`, {
      ...cors,
      allow: `${METHODS}, OPTIONS`,
    })
  }
  if (request.headers.get('last-event-id') === DONE) return new R(null, { status: 204, headers: cors })
  return undefined
}

/**
 * The streams of a host without the part: 501 for both, as a host with it
 * answers where the runtime's runs change elsewhere. A run's stream keeps
 * what lets a page of a listed origin read that answer (`runStreamPreamble`,
 * and the CORS headers), and checks no credentials: its 501 serves no one
 * anything.
 */
export const NO_STREAMS: EventStreams = {
  create({ runtime, env, R, runEvents }) {
    const allowed = allowedOrigins(runEvents?.origins, env)
    // A runtime that reports run changes could stream them, but this host did not take the part that does.
    const why = runtime.onRunChange ? 'This host serves no event streams' : RUNS_ELSEWHERE
    return {
      events: () => notStreamed(R, why),
      run: async (request, runId) => {
        const cors = corsHeaders(request, allowed)
        return runStreamPreamble(request, allowed, R, cors) ?? notStreamed(R, why, runId, cors)
      },
    }
  },
}
