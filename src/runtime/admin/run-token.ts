/**
 * Run tokens: a signed claim that lets its holder read one run, until it
 * expires (docs/realtime.md). The task server checks them on
 * `GET /__tasks/runs/<id>/stream`; an app's server makes them with
 * `createRunToken()` and hands them to its pages.
 *
 * A token is `rt2.<payload>.<signature>`, all of it URL-safe:
 * - `rt2.` names the format, and is signed with the rest, so a signature
 *   made for anything else under the same key never passes as a token;
 * - `<payload>` is the JSON `{"run":"<id>","exp":<Unix seconds>}` in
 *   base64url (RFC 4648 §5, without padding);
 * - `<signature>` is HMAC-SHA-256 (RFC 2104) of `rt2.<payload>`, in
 *   base64url, keyed with a key derived from the task secret.
 *
 * The key is HKDF-SHA-256 (RFC 5869) of the task secret with the label
 * `RUN_TOKEN_KEY_INFO`, never the secret itself: the secret is also the
 * bearer of the whole admin surface, and each use of it gets a key of its
 * own. HKDF does not make guessing slow, so a token still lets its holder
 * test guesses of a weak secret offline; the strength rule
 * (`taskSecretProblem` in rules.ts) is what makes that hopeless.
 *
 * Checking is bounded before it starts: a token longer than
 * `MAX_RUN_TOKEN_LENGTH` is refused unread, the parts are found by one scan,
 * and the payload is parsed only once Web Crypto has verified the signature
 * (`crypto.subtle.verify`, constant-time), so nothing an attacker writes is
 * parsed. Web Crypto exists on every target, so this is edge-safe.
 */

/** The format's name, the start of every token. */
export const RUN_TOKEN_PREFIX = 'rt2.'

/**
 * The first format, whose signature was keyed with the task secret itself.
 * Such a token is refused by name, so that whoever holds one learns to make
 * it again rather than to look for a wrong secret.
 */
const RETIRED_PREFIX = 'rt1.'

/** The HKDF `info` (RFC 5869 §2.3) that binds the derived key to run tokens of this format. */
export const RUN_TOKEN_KEY_INFO = 'svc run token v2'

/** Longest run id a token may name. Run ids are UUIDs, 36 characters. */
export const MAX_RUN_ID_LENGTH = 128

/** Longest token checked: a token for the longest run id fits with room to spare. */
export const MAX_RUN_TOKEN_LENGTH = 512

/** Why a token does not let its holder read a run; each is a 401 `code`. */
export type RunTokenProblem = 'RUN_TOKEN_INVALID' | 'RUN_TOKEN_EXPIRED' | 'RUN_TOKEN_WRONG_RUN'

export type RunTokenCheck = { ok: true; run: string; expiresAt: number } | { ok: false; code: RunTokenProblem; message: string }

const BASE64URL = /^[A-Za-z0-9_-]*$/
/** Bytes of an HMAC-SHA-256. */
const SIGNATURE_BYTES = 32
/** What a token looks like, for the messages. */
const SHAPE = `${RUN_TOKEN_PREFIX}<payload>.<signature>`

/** The signed token for `runId`, valid until `expiresAt` (Unix seconds). */
export async function signRunToken(runId: string, expiresAt: number, secret: string): Promise<string> {
  const signed = RUN_TOKEN_PREFIX + toBase64url(utf8(JSON.stringify({ run: runId, exp: expiresAt })))
  const signature = await crypto.subtle.sign('HMAC', await signingKey(secret), utf8(signed))
  return `${signed}.${toBase64url(new Uint8Array(signature))}`
}

/**
 * Whether `token` lets its holder read run `runId` at `now` (epoch ms). The
 * messages say what is wrong and what to do; none repeats the token.
 */
export async function verifyRunToken(token: string, runId: string, secret: string, now: number = Date.now()): Promise<RunTokenCheck> {
  if (token.length > MAX_RUN_TOKEN_LENGTH) {
    return invalid(`The run token is ${token.length} characters long, more than a run token has (${MAX_RUN_TOKEN_LENGTH})`)
  }
  if (token.startsWith(RETIRED_PREFIX)) {
    return invalid(
      `The run token is in the retired "${RETIRED_PREFIX}" format, which this server no longer accepts: tokens made before svc signed them with a derived key must be made again. Ask the app for a new one (createRunToken() makes "${RUN_TOKEN_PREFIX}" tokens)`,
    )
  }
  if (!token.startsWith(RUN_TOKEN_PREFIX)) return invalid(`A run token starts with "${RUN_TOKEN_PREFIX}"; this one does not`)
  const dot = token.indexOf('.', RUN_TOKEN_PREFIX.length)
  if (dot === -1 || token.indexOf('.', dot + 1) !== -1) return invalid(`A run token is ${SHAPE}; this one is not`)
  const signature = fromBase64url(token.slice(dot + 1))
  if (signature === undefined || signature.length !== SIGNATURE_BYTES || !BASE64URL.test(token.slice(RUN_TOKEN_PREFIX.length, dot))) {
    return invalid(`The run token is not ${SHAPE} in base64url`)
  }
  const valid = await crypto.subtle.verify('HMAC', await signingKey(secret), signature, utf8(token.slice(0, dot)))
  if (!valid) {
    return invalid(
      'The run token was not signed with the task secret of this server (SVC_TASK_SECRET): it was altered, or signed with another secret',
    )
  }
  const claim = parseClaim(token.slice(RUN_TOKEN_PREFIX.length, dot))
  if (claim === undefined) return invalid('The run token is signed, but its payload is not { run, exp }')
  if (claim.run !== runId) {
    return { ok: false, code: 'RUN_TOKEN_WRONG_RUN', message: `The run token is for another run, not "${runId}"; make one for this run` }
  }
  if (claim.exp * 1000 <= now) {
    return {
      ok: false,
      code: 'RUN_TOKEN_EXPIRED',
      message: `The run token expired at ${new Date(claim.exp * 1000).toISOString()}; ask the app for a new one`,
    }
  }
  return { ok: true, run: claim.run, expiresAt: claim.exp }
}

function invalid(message: string): RunTokenCheck {
  return { ok: false, code: 'RUN_TOKEN_INVALID', message }
}

function parseClaim(payload: string): { run: string; exp: number } | undefined {
  const bytes = fromBase64url(payload)
  if (bytes === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    return undefined
  }
  if (value === null || typeof value !== 'object') return undefined
  const { run, exp } = value as Record<string, unknown>
  if (typeof run !== 'string' || !Number.isSafeInteger(exp)) return undefined
  return { run, exp: exp as number }
}

/**
 * Derived keys by secret. A server signs and checks with one secret, and
 * deriving costs more than signing, so each is derived once. Bounded, since
 * `createRunToken({ secret })` signs with whatever secret its caller passes:
 * past the bound the oldest key is dropped and derived again when needed.
 */
let keys: Map<string, Promise<CryptoKey>> | undefined
const MAX_CACHED_KEYS = 8

function signingKey(secret: string): Promise<CryptoKey> {
  // Made on first use, not at import, as the encoders below are.
  keys ??= new Map()
  const known = keys.get(secret)
  if (known !== undefined) return known
  if (keys.size >= MAX_CACHED_KEYS) keys.delete(keys.keys().next().value as string)
  const key = deriveSigningKey(secret)
  keys.set(secret, key)
  // A failed derivation is not kept, so the next call tries again.
  key.catch(() => {
    if (keys?.get(secret) === key) keys.delete(secret)
  })
  return key
}

/**
 * HKDF-SHA-256 (RFC 5869) of the secret's UTF-8 bytes, as a 256-bit
 * HMAC-SHA-256 key, with `RUN_TOKEN_KEY_INFO` as the info. The salt is
 * empty, which RFC 5869 §2.2 reads as HashLen zero bytes: every server that
 * shares the secret must derive the same key, so a salt could only be a
 * constant, and the info already binds the key to run tokens.
 */
async function deriveSigningKey(secret: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', utf8(secret), 'HKDF', false, ['deriveKey'])
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8(RUN_TOKEN_KEY_INFO) },
    material,
    { name: 'HMAC', hash: 'SHA-256', length: 256 },
    false,
    ['sign', 'verify'],
  )
}

// Encoders are made per call, not at import: a bundle that carries this
// module only for its constants then keeps none of it.
function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text)
}

function toBase64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** The bytes of unpadded base64url `text`, or `undefined` when it is not that. */
function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined
  let binary: string
  try {
    binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  } catch {
    return undefined
  }
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
