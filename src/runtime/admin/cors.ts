/**
 * Cross-origin requests to one run (Fetch standard, "CORS protocol"). An
 * app's pages often live on another origin than its task server; the
 * origins it lists (`runEvents.origins`, else `SVC_REALTIME_ORIGINS`) may
 * read `GET /__tasks/runs/<id>/stream` and send
 * `POST /__tasks/runs/<id>/signals/<name>`, with a run token they send
 * themselves. No other answer of the admin surface carries CORS headers,
 * so no other page can read it, and no other write is preflighted with
 * leave (see `content-type.ts`).
 *
 * `Access-Control-Allow-Credentials` is never sent: the credential is a
 * bearer token the page holds, never a cookie the browser adds, so letting
 * an origin read the stream gives it nothing it does not already hold.
 */
import type { EnvLike } from '../env.ts'
import { jsonError } from '../http/errors.ts'
import type { ResponseClass } from '../http/types.ts'
import { normalizeOrigin } from '../origins.ts'

/** The variable that lists the origins when `runEvents.origins` is not set. */
export const REALTIME_ORIGINS_ENV = 'SVC_REALTIME_ORIGINS'

/** What the pages of a listed origin may do at one endpoint, as its preflight answers. */
export interface CorsEndpoint {
  /** `Access-Control-Allow-Methods`. */
  methods: string
  /** `Access-Control-Allow-Headers`. */
  headers: string
  /** What the pages of another origin may not do, for the 403. */
  refused: string
}

/** A run's stream: a run token, and the headers `EventSource` adds on its own. */
export const RUN_STREAM_CORS: CorsEndpoint = {
  methods: 'GET, HEAD',
  headers: 'authorization, cache-control, last-event-id',
  refused: 'read this run stream',
}

/** A signal to a run: a run token, the JSON data, and its id. */
export const RUN_SIGNAL_CORS: CorsEndpoint = {
  methods: 'POST',
  headers: 'authorization, content-type, idempotency-key',
  refused: 'send signals to this run',
}

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = '600'

/** Which origins may read: every one (`*`), or those listed, normalized. */
export interface AllowedOrigins {
  any: boolean
  origins: ReadonlySet<string>
}

/**
 * `option` (`runEvents.origins`, already checked), else the origins of
 * `SVC_REALTIME_ORIGINS`, separated by commas or blanks. Throws a
 * `TypeError` naming the variable for an entry that is not an origin.
 */
export function allowedOrigins(option: readonly string[] | undefined, env: EnvLike): AllowedOrigins {
  const entries = option ?? (env[REALTIME_ORIGINS_ENV] ?? '').split(/[\s,]+/).filter((entry) => entry !== '')
  const origins = new Set<string>()
  let any = false
  for (const entry of entries) {
    if (entry === '*') {
      any = true
      continue
    }
    const origin = normalizeOrigin(entry)
    if (origin === null) {
      throw new TypeError(
        `${REALTIME_ORIGINS_ENV} holds ${JSON.stringify(entry)}, which is not an http(s) origin; list full origins such as https://app.example.com, separated by commas, or * for every origin`,
      )
    }
    origins.add(origin)
  }
  return { any, origins }
}

/** Whether `entry` may stand in `runEvents.origins`: `*`, or an http(s) origin. */
export function isOriginEntry(entry: unknown): boolean {
  return typeof entry === 'string' && (entry === '*' || normalizeOrigin(entry) !== null)
}

/**
 * The CORS headers of an answer to `request`: `Access-Control-Allow-Origin`
 * when its `Origin` may read, and always `Vary: Origin`, since the answer
 * depends on it (RFC 9110 §12.5.5).
 */
export function corsHeaders(request: Request, allowed: AllowedOrigins): Record<string, string> {
  const origin = request.headers.get('origin')
  if (origin === null || !mayRead(origin, allowed)) return { vary: 'origin' }
  // Retry-After of a 503 tells the page when to connect again; CORS hides it unless exposed.
  return { 'access-control-allow-origin': allowed.any ? '*' : origin, 'access-control-expose-headers': 'retry-after', vary: 'origin' }
}

/**
 * The answer to `OPTIONS`: a CORS preflight from an allowed origin gets 204
 * with what it may send; one from another origin gets 403
 * `ORIGIN_NOT_ALLOWED` naming where to list it; a plain `OPTIONS` gets 204
 * with `Allow`.
 */
export function preflight(request: Request, allowed: AllowedOrigins, R: ResponseClass, endpoint: CorsEndpoint): Response {
  const origin = request.headers.get('origin')
  const asked = request.headers.get('access-control-request-method')
  if (origin === null || asked === null) return new R(null, { status: 204, headers: { allow: `${endpoint.methods}, OPTIONS` } })
  if (!mayRead(origin, allowed)) {
    return jsonError(
      R,
      403,
      'ORIGIN_NOT_ALLOWED',
      `Pages of ${origin} may not ${endpoint.refused}: add the origin to runEvents.origins or ${REALTIME_ORIGINS_ENV} on the task server`,
      { vary: 'origin' },
    )
  }
  return new R(null, {
    status: 204,
    headers: {
      ...corsHeaders(request, allowed),
      'access-control-allow-methods': endpoint.methods,
      'access-control-allow-headers': endpoint.headers,
      'access-control-max-age': PREFLIGHT_MAX_AGE,
    },
  })
}

/** `response` again, with `headers` added: the answers made elsewhere (`auth.ts`, `http/errors.ts`) know nothing of CORS. */
export async function withHeaders(R: ResponseClass, response: Response, headers: Record<string, string>): Promise<Response> {
  const merged: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    merged[name] = value
  })
  return new R(await response.text(), { status: response.status, headers: { ...merged, ...headers } })
}

function mayRead(origin: string, allowed: AllowedOrigins): boolean {
  if (allowed.any) return true
  const normalized = normalizeOrigin(origin)
  return normalized !== null && allowed.origins.has(normalized)
}
