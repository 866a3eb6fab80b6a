/**
 * Whether a request from a loopback peer was made by the developer on this
 * machine: the condition, besides the peer address, of the exemption from
 * the task secret in development (see `auth.ts`).
 *
 * A loopback peer alone does not say who asked. The developer's browser is a
 * loopback peer for every page it shows, so any site can make it send
 * requests to a local server; a name the attacker controls can resolve to
 * 127.0.0.1 once the page has loaded (DNS rebinding), which makes that page's
 * requests same-origin to the browser; and a proxy on the same host is a
 * loopback peer for all of its clients. So the request must also:
 * - name a loopback host in `Host` (RFC 9110 §7.2), or in its URL where it
 *   has no `Host` (a `Request` built in-process): `localhost`, a name under
 *   `.localhost` (RFC 6761 §6.3), an address in 127.0.0.0/8 or `[::1]`, on
 *   any port. A rebound name is none of these.
 * - carry no `Origin` (RFC 6454 §7), or a loopback one on any port.
 * - carry no `Sec-Fetch-Site` (Fetch Metadata), or `same-origin`, or `none`
 *   (the user typed the URL). A page on another port of this machine is a
 *   different origin, and its requests are `same-site`; a page of another
 *   host sends `cross-site`.
 * - carry none of the headers proxies add: `Forwarded` (RFC 7239),
 *   `X-Forwarded-For`, `X-Real-IP` and `Via` (RFC 9110 §7.6.3).
 * curl, Node's `fetch` and the CLI send none of the browser headers, and a
 * loopback `Host`, so they pass. Header values are read with linear scans: no
 * backtracking regular expression runs over request data.
 */

/** The headers a proxy adds, each with its name as a message shows it. */
const PROXY_HEADERS: readonly (readonly [string, string])[] = [
  ['forwarded', 'Forwarded'],
  ['x-forwarded-for', 'X-Forwarded-For'],
  ['x-real-ip', 'X-Real-IP'],
  ['via', 'Via'],
]

/**
 * Why `request` may be another site's or a proxy's rather than the
 * developer's own, naming the header that says so; `undefined` when it is
 * the developer's own.
 */
export function foreignRequestProblem(request: Request): string | undefined {
  const headers = request.headers
  for (const [name, shown] of PROXY_HEADERS) {
    if (headers.has(name)) return `The request carries ${shown}, so it came through a proxy, which may forward anyone's requests`
  }
  const host = headers.get('host') ?? urlHost(request.url)
  if (!isLoopbackHost(host)) {
    return `Host ${quote(host)} is not a loopback name (localhost, *.localhost, 127.0.0.0/8 or [::1]); another site's name that resolves to this machine would send it (DNS rebinding)`
  }
  const origin = headers.get('origin')
  if (origin !== null && !isLoopbackOrigin(origin)) return `Origin ${quote(origin)} is another site, whose pages may not use this server`
  const site = headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin' && site !== 'none') {
    return `Sec-Fetch-Site: ${quote(site)} says a page of another origin sent the request`
  }
  return undefined
}

/** A socket peer address in 127.0.0.0/8, `::1`, or their IPv4-mapped IPv6 forms. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false
  const a = address.toLowerCase()
  if (a === '::1' || a === '0:0:0:0:0:0:0:1') return true
  return isLoopbackIPv4(a.startsWith('::ffff:') ? a.slice(7) : a)
}

/**
 * `localhost`, a name under `.localhost`, a dotted address in 127.0.0.0/8 or
 * `[::1]`, each with an optional `:port`, as a `Host` header or a URL's host
 * has them. Case-insensitive.
 */
export function isLoopbackHost(value: string): boolean {
  const host = value.toLowerCase()
  let end: number
  if (host.charCodeAt(0) === 0x5b /* [ */) {
    end = host.indexOf(']')
    if (end === -1) return false
    const address = host.slice(1, end)
    if (address !== '::1' && address !== '0:0:0:0:0:0:0:1') return false
    end++
  } else {
    end = host.indexOf(':')
    if (end === -1) end = host.length
    const name = host.slice(0, end)
    if (!isLocalhostName(name) && !isLoopbackIPv4(name)) return false
  }
  return end === host.length || (host.charCodeAt(end) === 0x3a /* : */ && isPort(host, end + 1))
}

/** An `Origin` (RFC 6454 §7: scheme, host, optional port) of http or https on a loopback host. */
export function isLoopbackOrigin(value: string): boolean {
  const origin = value.toLowerCase()
  if (origin.startsWith('http://')) return isLoopbackHost(origin.slice(7))
  if (origin.startsWith('https://')) return isLoopbackHost(origin.slice(8))
  return false
}

/** `localhost`, or labels of letters, digits and hyphens followed by `.localhost`. */
function isLocalhostName(name: string): boolean {
  if (name === 'localhost') return true
  if (!name.endsWith('.localhost')) return false
  const labels = name.length - '.localhost'.length
  let label = 0
  for (let i = 0; i < labels; i++) {
    const c = name.charCodeAt(i)
    if (c === 0x2e /* . */) {
      if (label === 0) return false
      label = 0
    } else if ((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d) {
      label++
    } else {
      return false
    }
  }
  return label > 0
}

/** Four dotted decimal parts of at most 255, the first 127. */
function isLoopbackIPv4(name: string): boolean {
  let parts = 0
  let digits = 0
  let part = 0
  for (let i = 0; i <= name.length; i++) {
    const c = i === name.length ? 0x2e : name.charCodeAt(i)
    if (c === 0x2e) {
      if (digits === 0 || part > 255 || (parts === 0 && part !== 127)) return false
      parts++
      digits = 0
      part = 0
    } else if (c >= 0x30 && c <= 0x39 && digits < 3) {
      part = part * 10 + (c - 0x30)
      digits++
    } else {
      return false
    }
  }
  return parts === 4
}

/** The rest of `text` from `from` is a port: at most five digits (RFC 3986 §3.2.3 allows none). */
function isPort(text: string, from: number): boolean {
  if (text.length - from > 5) return false
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  return true
}

function urlHost(url: string): string {
  try {
    return new URL(url).host
  } catch {
    return ''
  }
}

/** A header value as a message shows it: quoted, and cut short past 100 characters. */
function quote(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)
}
