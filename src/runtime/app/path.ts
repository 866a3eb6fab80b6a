/**
 * The path of a request. Parsing `request.url` is a measurable share of a
 * small request's cost on Node, where srvx builds the URL lazily: when the
 * host exposes the raw request target (srvx: `request.runtime.node.req.url`)
 * and it needs no normalization, it is used as is. Anything with `%`, `\` or
 * a dot segment goes through the URL parser, so routing always sees the
 * normalized, decoded path (RFC 3986 §5.2.4).
 */
import { getPath } from 'hono/utils/url'

type NodeBacked = { runtime?: { node?: { req?: { url?: string } } } }

export function requestPath(request: Request): string {
  const raw = (request as NodeBacked).runtime?.node?.req?.url
  if (raw !== undefined && raw.charCodeAt(0) === 47 /* / */) {
    const fast = plainPath(raw)
    if (fast !== undefined) return fast
  }
  return getPath(request)
}

function plainPath(raw: string): string | undefined {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c === 63 /* ? */ || c === 35 /* # */) return raw.slice(0, i)
    if (c === 37 /* % */ || c === 92 /* \ */ || (c === 46 /* . */ && raw.charCodeAt(i - 1) === 47)) return undefined
  }
  return raw
}
