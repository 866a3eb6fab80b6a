/**
 * A query string as a span may record it (`url.query`; docs/observability.md
 * "Secrets in the query"): the value of every parameter whose name looks
 * like a secret is replaced by `REDACTED`, and names, order and every other
 * byte are kept, as the OpenTelemetry semantic conventions ask of
 * `url.query` and `url.full`
 * (https://opentelemetry.io/docs/specs/semconv/registry/attributes/url/).
 * A run token passed as `?token=` to a browser's `EventSource` is the
 * secret svc itself puts there. Edge-safe.
 */

/** What a secret value is replaced by, as the semantic conventions name it. */
export const REDACTED = 'REDACTED'

// A name holding one of these anywhere is a secret's: they seldom occur
// inside a harmless word, and catch `access_token`, `accessToken`,
// `client_secret`, `X-Amz-Security-Token`, `X-Goog-Signature`, `sessionid`.
const SECRET_PART = /token|secret|password|passwd|credential|signature|apikey|authorization|session/i

// Short ones match only a whole word of the name, so `key` catches
// `api_key`, `apiKey` and `AWSAccessKeyId` but not `keyword` or `monkey`,
// and `auth` catches `auth` but not `author`.
const SECRET_WORDS = new Set(['key', 'auth', 'sig', 'pwd'])
const SHORTEST_WORD = 3
const LONGEST_WORD = 4

const AMPERSAND = 0x26
const EQUALS = 0x3d

/**
 * `query` (without its `?`) with the value of each secret-looking
 * parameter replaced by `REDACTED`; `query` itself when nothing is hidden.
 * An empty value stays empty: there is nothing to hide, and it tells a
 * reader that no token was sent.
 *
 * Parameters are split as WHATWG URL's `URLSearchParams` splits them, the
 * parser svc reads `token` with: on `&` only, the name running to the first
 * `=`. Splitting on `;` as well would show the rest of a value holding one.
 * Names are matched case-insensitively and after percent-decoding, so
 * `Token` and `%74oken` are caught too; the conventions match their own list
 * case-sensitively, and redacting more never shows a secret. One pass over
 * `query`, and nothing in it can make it throw.
 */
export function redactQuery(query: string): string {
  let out = ''
  // query.slice(0, copied) is in `out` already.
  let copied = 0
  let start = 0
  let equals = -1
  for (let i = 0; i <= query.length; i++) {
    const code = i === query.length ? AMPERSAND : query.charCodeAt(i)
    if (code === EQUALS && equals === -1) equals = i
    else if (code === AMPERSAND) {
      if (equals !== -1 && equals + 1 < i && isSecretName(query.slice(start, equals))) {
        out += `${query.slice(copied, equals + 1)}${REDACTED}`
        copied = i
      }
      start = i + 1
      equals = -1
    }
  }
  return copied === 0 ? query : out + query.slice(copied)
}

/** Whether a query parameter named `name` (as sent, percent-encoded) carries a secret. */
export function isSecretName(name: string): boolean {
  const decoded = name.includes('%') ? percentDecoded(name) : name
  return SECRET_PART.test(decoded) || hasSecretWord(decoded)
}

/**
 * `name` with each `%XX` of an ASCII byte decoded, and every other `%XX`
 * (a byte of a multi-byte character) made a space, which no secret word
 * holds. A `%` not followed by two hex digits stays, as WHATWG URL's
 * percent-decode leaves it; unlike `decodeURIComponent`, this cannot throw.
 */
function percentDecoded(name: string): string {
  let out = ''
  let copied = 0
  for (let at = name.indexOf('%'); at !== -1 && at + 2 < name.length; at = name.indexOf('%', at + 1)) {
    const byte = hexDigit(name.charCodeAt(at + 1)) * 16 + hexDigit(name.charCodeAt(at + 2))
    if (byte < 0) continue
    out += `${name.slice(copied, at)}${byte < 0x80 ? String.fromCharCode(byte) : ' '}`
    copied = at + 3
    at += 2
  }
  return out + name.slice(copied)
}

/** The value of hex digit `code`, or -256, so that a byte with a digit that is not hex comes out negative. */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  const lower = code | 0x20
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10
  return -0x100
}

/**
 * Whether a word of `name` is one of `SECRET_WORDS`, in any case. Words
 * split at anything not an ASCII letter and at camelCase, an acronym
 * included: `AWSAccessKeyId` is aws, access, key, id.
 */
function hasSecretWord(name: string): boolean {
  let start = 0
  for (let i = 0; i <= name.length; i++) {
    const code = i === name.length ? 0 : name.charCodeAt(i)
    let next: number
    if (!isLetter(code)) next = i + 1
    else if (isUpper(code) && i > start && (!isUpper(name.charCodeAt(i - 1)) || isLower(name.charCodeAt(i + 1)))) next = i
    else continue
    if (isSecretWord(name, start, i)) return true
    start = next
  }
  return false
}

function isSecretWord(name: string, start: number, end: number): boolean {
  const length = end - start
  return length >= SHORTEST_WORD && length <= LONGEST_WORD && SECRET_WORDS.has(name.slice(start, end).toLowerCase())
}

function isLetter(code: number): boolean {
  return isUpper(code) || isLower(code)
}

function isUpper(code: number): boolean {
  return code >= 0x41 && code <= 0x5a
}

function isLower(code: number): boolean {
  return code >= 0x61 && code <= 0x7a
}
