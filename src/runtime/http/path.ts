/**
 * Request paths and route patterns. The path a request is routed by is the
 * path of `request.url`, normalized and decoded (RFC 3986 §5.2.4) by Hono's
 * `getPath`.
 *
 * Reading `request.url` is a measurable share of a small request's cost on
 * Node, where srvx builds the URL lazily. A host that built the request from
 * the raw request target a moment ago (the Node server) may pass that target
 * in the request info under `RAW_TARGET`, and it is then used as is when it
 * needs no normalization. Nothing else can vouch for the raw target: a host
 * that mounts svc under a prefix rewrites `request.url` and may keep srvx's
 * `runtime.node.req` (h3 wraps the request in a proxy), so the target the
 * socket carried is not the URL svc was given.
 */
import { getPath } from 'hono/utils/url'

/** Key of the raw request target in the request info; set only by the host that built the request. */
export const RAW_TARGET: unique symbol = Symbol('svc.rawTarget')

export interface RawTargetInfo {
  /** The origin-form request target (RFC 9112 §3.2.1) `request.url` was built from, unchanged. */
  readonly [RAW_TARGET]?: string
}

/** The routing path of `request`; `info` is the request info its host passed along. */
export function requestPath(request: Request, info?: unknown): string {
  const raw = (info as RawTargetInfo | undefined)?.[RAW_TARGET]
  if (raw !== undefined && raw.charCodeAt(0) === 47 /* / */) {
    const fast = plainPath(raw)
    if (fast !== undefined) return fast
  }
  return getPath(request)
}

/** Hono's `getPath` option: Hono passes fetch's `env` argument, where svc's handler puts the request info. */
export function honoRequestPath(request: Request, options?: { env?: unknown }): string {
  return requestPath(request, options?.env)
}

/** The path of a raw target that needs no decoding or dot-segment removal, else undefined. */
function plainPath(raw: string): string | undefined {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c === 63 /* ? */ || c === 35 /* # */) return raw.slice(0, i)
    if (c === 37 /* % */ || c === 92 /* \ */ || (c === 46 /* . */ && raw.charCodeAt(i - 1) === 47)) return undefined
  }
  return raw
}

/**
 * `path` without its trailing slashes, in one backward scan. A regular
 * expression such as `/\/+$/` is tried at every slash of a run, so a path of
 * many slashes followed by anything else costs the square of its length.
 */
export function trimTrailingSlashes(path: string): string {
  let end = path.length
  while (end > 0 && path.charCodeAt(end - 1) === 47 /* / */) end--
  return end === path.length ? path : path.slice(0, end)
}

/**
 * A manifest URL pattern as a Hono path: the scanner writes a catch-all
 * `[...rest]` as `:rest*`, which is `:rest{.+}` to Hono (one segment or more).
 */
export function toHonoPath(path: string): string {
  return path.replace(/:([A-Za-z_$][\w$]*)\*(?=\/|$)/g, ':$1{.+}')
}

/** A path segment percent-decoded, or as it came when it is no valid encoding (`decodeURIComponent` would throw). */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
