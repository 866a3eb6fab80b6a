/**
 * AWS Lambda events, as far as the shim reads them: API Gateway HTTP API
 * (payload format 2.0) and function URL events share one shape; scheduled
 * invocations carry the cron expression they stand for.
 */

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

export function isScheduleEvent(event: unknown): event is ScheduleEvent {
  return !!event && typeof (event as ScheduleEvent).svcCron === 'string'
}

/** A Web `Request` for an HTTP API v2 or function URL event. */
export function toRequest(event: HttpEventV2): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers.set(name, value)
  // Payload format 2.0 moves Cookie headers into `cookies`.
  if (event.cookies?.length) headers.set('cookie', event.cookies.join('; '))
  const host = headers.get('host') ?? event.requestContext.domainName ?? 'localhost'
  const proto = headers.get('x-forwarded-proto') ?? 'https'
  const query = event.rawQueryString ? `?${event.rawQueryString}` : ''
  const method = event.requestContext.http.method.toUpperCase()
  const hasBody = event.body !== undefined && event.body !== null && method !== 'GET' && method !== 'HEAD'
  const body = hasBody ? (event.isBase64Encoded ? base64ToBytes(event.body!) : event.body) : undefined
  return new Request(`${proto}://${host}${appPath(event)}${query}`, { method, headers, body })
}

/**
 * The path the app routes on. An HTTP API invoked at
 * `https://<api>.execute-api.<region>.amazonaws.com/<stage>/…` keeps the
 * `/<stage>` segment in `rawPath`; the `$default` stage is served at the root.
 * The segment is removed only when it is there, so a path that merely starts
 * with the same letters, or one that arrives without it, stays as it is.
 */
function appPath(event: HttpEventV2): string {
  const stage = event.requestContext.stage
  if (!stage || stage === '$default') return event.rawPath
  const prefix = `/${stage}`
  if (event.rawPath === prefix) return '/'
  return event.rawPath.startsWith(`${prefix}/`) ? event.rawPath.slice(prefix.length) : event.rawPath
}

const TEXT_TYPE = /^(text\/|application\/(json|javascript|xml|x-www-form-urlencoded)|[^;]*\+(json|xml))/i

/**
 * The v2 result for a Web `Response`: text bodies as-is, anything else
 * base64. API Gateway and function URLs read a text body as UTF-8, so a body
 * travels as text only when its type is textual, it is not content-encoded
 * (gzip bytes under `application/json`) and its bytes are valid UTF-8.
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

function base64ToBytes(value: string): Uint8Array<ArrayBuffer> {
  const binary = atob(value)
  const out = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i)
  return out
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}
