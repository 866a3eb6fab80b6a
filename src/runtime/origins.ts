/**
 * Origin allowlists for the WebSocket handshake of hot routes.
 *
 * Entries compare as URL origins (RFC 6454): scheme, host and port, lower-cased,
 * with paths, trailing slashes and default ports normalized away.
 */

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' }

/**
 * The bare origin of a URL string (`https://Example.com:443/app/` gives
 * `https://example.com`), or `null` when the string is not an absolute
 * http(s)/ws(s) URL.
 */
export function normalizeOrigin(value: string): string | null {
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    return null
  }
  if (!(url.protocol in DEFAULT_PORTS) || !url.hostname) return null
  // URL already drops default ports and lower-cases scheme and host.
  const port = url.port && url.port !== DEFAULT_PORTS[url.protocol] ? `:${url.port}` : ''
  return `${url.protocol}//${url.hostname}${port}`
}

/**
 * Whether an upgrade request with this `Origin` header may open a socket.
 * - `allowed` unset: open to every origin.
 * - no `Origin` header (non-browser clients): always passes.
 * - the opaque origin `null`: denied whenever a list is set.
 * - `[]`: denies every browser origin.
 */
export function isOriginAllowed(origin: string | null | undefined, allowed: readonly string[] | null | undefined): boolean {
  if (allowed === null || allowed === undefined) return true
  if (origin === null || origin === undefined || origin === '') return true
  if (origin.trim().toLowerCase() === 'null') return false
  const normalized = normalizeOrigin(origin)
  if (normalized === null) return false
  return allowed.some((entry) => normalizeOrigin(entry) === normalized)
}
