/**
 * AWS Lambda events, as far as the shim reads them: API Gateway HTTP API
 * (payload format 2.0) and function URL events share one shape; scheduled
 * invocations carry the cron expression they stand for.
 */
import type { AWSLambdaProxyEventV2 } from 'srvx'

export interface HttpEventV2 {
  version: '2.0'
  rawPath: string
  rawQueryString?: string
  headers?: Record<string, string | undefined>
  cookies?: string[]
  body?: string
  isBase64Encoded?: boolean
  requestContext: {
    domainName?: string
    /** The API Gateway stage; function URL events have none. */
    stage?: string
    http: { method: string; path?: string; sourceIp?: string }
  }
}

/**
 * A scheduled invocation. Point an EventBridge Scheduler schedule (or rule)
 * at the function with this JSON as its input; `svc build --target lambda`
 * writes every schedule, with its input, to `schedules.json`.
 */
export interface ScheduleEvent {
  svcCron: string
  /** The zone the schedule is read in; tasks sharing `svcCron` in other zones do not fire. */
  svcTimezone?: string
}

/**
 * The tick: an invocation that sweeps due work (ends of sleeps, retries,
 * delayed runs, token timeouts, attempts whose instance died). `svc build`
 * lists it in `schedules.json` to run every minute when the app has tasks.
 */
export interface TickEvent {
  svcTick: true
}

export interface HttpResultV2 {
  statusCode: number
  headers: Record<string, string>
  cookies?: string[]
  body: string
  isBase64Encoded: boolean
}

export function isHttpEventV2(event: unknown): event is HttpEventV2 {
  const e = event as Partial<HttpEventV2> | null
  return !!e && e.version === '2.0' && typeof e.rawPath === 'string' && !!e.requestContext?.http?.method
}

export function isTickEvent(event: unknown): event is TickEvent {
  return !!event && (event as TickEvent).svcTick === true
}

export function isScheduleEvent(event: unknown): event is ScheduleEvent {
  return !!event && typeof (event as ScheduleEvent).svcCron === 'string'
}

/**
 * The event as srvx's Lambda adapter reads it, which turns it into the
 * `Request` (cookies array, base64 body, host). srvx reads `rawPath` as is,
 * so the stage segment is removed here first; it also needs `headers`, and
 * refuses a body on GET and HEAD as `new Request` does, where API Gateway
 * passes one along.
 */
export function forSrvx(event: HttpEventV2): AWSLambdaProxyEventV2 {
  const method = event.requestContext.http.method.toUpperCase()
  const body = method === 'GET' || method === 'HEAD' ? undefined : (event.body ?? undefined)
  return {
    ...event,
    rawPath: appPath(event),
    rawQueryString: event.rawQueryString ?? '',
    headers: event.headers ?? {},
    body,
    isBase64Encoded: event.isBase64Encoded ?? false,
    requestContext: { ...event.requestContext, http: { ...event.requestContext.http, method } },
  }
}

/**
 * The path the app routes on. An HTTP API invoked at
 * `https://<api>.execute-api.<region>.amazonaws.com/<stage>/…` keeps the
 * `/<stage>` segment in `rawPath`; the `$default` stage is served at the root.
 * The segment is removed only when it is there, so a path that merely starts
 * with the same letters, or one that arrives without it, stays as it is.
 */
function appPath(event: HttpEventV2): string {
  const { stage, domainName } = event.requestContext
  if (!stage || stage === '$default') return event.rawPath
  // Only the API's own endpoint carries the stage in the path; a custom
  // domain maps the stage through its API mapping and leaves it out, so a
  // route whose first segment happens to be the stage name keeps it there.
  if (domainName !== undefined && !domainName.includes('.execute-api.')) return event.rawPath
  const prefix = `/${stage}`
  if (event.rawPath === prefix) return '/'
  return event.rawPath.startsWith(`${prefix}/`) ? event.rawPath.slice(prefix.length) : event.rawPath
}

/**
 * `request` with the scheme the client used. API Gateway and function URLs
 * put it in X-Forwarded-Proto, as the header's last entry: one a client sent
 * comes before it. srvx believes the header only behind a proxy named in
 * `trustProxy`, and then also X-Forwarded-Host, which a client sets at will
 * here; so the scheme alone is taken, from the last entry, and the URL set
 * as srvx sets it for a trusted proxy.
 */
export function withForwardedProto(request: Request, headers: Record<string, string | undefined> | undefined): Request {
  const value = headers?.['x-forwarded-proto'] ?? headers?.['X-Forwarded-Proto']
  if (value === undefined) return request
  const proto = value
    .slice(value.lastIndexOf(',') + 1)
    .trim()
    .toLowerCase()
  const url = request.url
  const current = url.slice(0, url.indexOf(':'))
  if ((proto !== 'http' && proto !== 'https') || proto === current) return request
  Object.defineProperty(request, 'url', { value: `${proto}${url.slice(current.length)}`, enumerable: true, configurable: true })
  return request
}

const TEXT_TYPE = /^(text\/|application\/(json|javascript|xml|x-www-form-urlencoded)|[^;]*\+(json|xml))/i

/**
 * The v2 result for a Web `Response`: text bodies as-is, anything else
 * base64. API Gateway and function URLs read a text body as UTF-8, so a body
 * travels as text only when its type is textual, it is not content-encoded
 * (gzip bytes under `application/json`) and its bytes are valid UTF-8.
 * srvx's adapter writes results too, but sends every textual type as text,
 * which would corrupt those two: so this part stays svc's own.
 */
export async function toResult(response: Response): Promise<HttpResultV2> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  const type = response.headers.get('content-type') ?? ''
  const bytes = new Uint8Array(await response.arrayBuffer())
  const text = bytes.length === 0 ? '' : TEXT_TYPE.test(type) && !response.headers.has('content-encoding') ? utf8(bytes) : undefined
  return {
    statusCode: response.status,
    headers,
    ...(cookies.length ? { cookies } : {}),
    body: text ?? bytesToBase64(bytes),
    isBase64Encoded: text === undefined,
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The bytes as a string, or `undefined` when they are not valid UTF-8 (a latin1 `text/plain`, say). */
function utf8(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}
