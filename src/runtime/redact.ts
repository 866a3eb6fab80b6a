/**
 * Passwords never reach a log or an error: what a store URL or
 * `SVC_STORE_URL` holds is printed through `redactUrl`.
 */

/**
 * `text` with the password of its URL replaced by `***`, whether or not the
 * URL parses. A password may hold any character when it is not
 * percent-encoded, `/`, `@`, `#` and `:` included, so the URL parser cannot
 * be trusted to find it (`postgres://svc:hunter2/xyz@host/db` parses as host
 * `svc` with a bad port, and `postgres://svc:123/x@host` as port 123 with
 * the rest for a path). The rule is RFC 3986's userinfo read the safe way: a
 * user name holds neither `:` nor `@`, so the password starts at the first
 * `:` after `//` when that comes before the first `@`, and it runs to the
 * last `@` of the text. When an `@` of a query follows, more than the
 * password is hidden; the password never shows.
 */
export function redactUrl(text: string): string {
  const slashes = text.indexOf('//')
  if (slashes === -1) return text
  const start = slashes + 2
  const firstAt = text.indexOf('@', start)
  if (firstAt === -1) return text
  const colon = text.indexOf(':', start)
  if (colon === -1 || colon > firstAt) return text
  return `${text.slice(0, colon + 1)}***${text.slice(text.lastIndexOf('@'))}`
}
