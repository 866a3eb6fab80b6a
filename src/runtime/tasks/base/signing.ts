/**
 * Signed tokens for svc's own claims (run tokens, callback URLs): each
 * kind signs with HMAC-SHA-256 (RFC 2104) under a key of its own, derived
 * from the task secret with HKDF-SHA-256 (RFC 5869) and the kind's `info`,
 * never the secret itself: the secret is also the bearer of the whole
 * admin surface. A token is `<prefix><payload>.<signature>`, both parts
 * base64url (RFC 4648 §5, unpadded), the signature over everything before
 * its dot. Web Crypto exists on every target, so this is edge-safe.
 */

const BASE64URL = /^[A-Za-z0-9_-]*$/
/** Bytes of an HMAC-SHA-256. */
const SIGNATURE_BYTES = 32

/** `<prefix><payload>.<signature>` for the JSON `claim`, signed under `info`. */
export async function signClaim(prefix: string, claim: unknown, secret: string, info: string): Promise<string> {
  const signed = prefix + toBase64url(utf8(JSON.stringify(claim)))
  const signature = await crypto.subtle.sign('HMAC', await signingKey(secret, info), utf8(signed))
  return `${signed}.${toBase64url(new Uint8Array(signature))}`
}

/**
 * The claim of `token` once its signature under `info` holds: `'shape'`
 * when it is not `<prefix><payload>.<signature>`, `'signature'` when the
 * signature does not hold, `'payload'` when the signed payload is not a
 * JSON object. Nothing an attacker wrote is parsed before Web Crypto has
 * verified it (constant-time).
 */
export async function verifyClaim(
  token: string,
  prefix: string,
  secret: string,
  info: string,
): Promise<{ claim: Record<string, unknown> } | { problem: 'shape' | 'signature' | 'payload' }> {
  if (!token.startsWith(prefix)) return { problem: 'shape' }
  const dot = token.indexOf('.', prefix.length)
  if (dot === -1 || token.indexOf('.', dot + 1) !== -1) return { problem: 'shape' }
  const signature = fromBase64url(token.slice(dot + 1))
  if (signature === undefined || signature.length !== SIGNATURE_BYTES || !BASE64URL.test(token.slice(prefix.length, dot))) {
    return { problem: 'shape' }
  }
  const valid = await crypto.subtle.verify('HMAC', await signingKey(secret, info), signature, utf8(token.slice(0, dot)))
  if (!valid) return { problem: 'signature' }
  const bytes = fromBase64url(token.slice(prefix.length, dot))
  let value: unknown
  try {
    value = bytes === undefined ? undefined : JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    value = undefined
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { problem: 'payload' }
  return { claim: value as Record<string, unknown> }
}

/**
 * Derived keys by secret and info. A server signs and checks with one
 * secret, and deriving costs more than signing, so each is derived once.
 * Bounded, since `createRunToken({ secret })` signs with whatever secret
 * its caller passes: past the bound the oldest key is dropped and derived
 * again when needed.
 */
let keys: Map<string, Promise<CryptoKey>> | undefined
const MAX_CACHED_KEYS = 8

function signingKey(secret: string, info: string): Promise<CryptoKey> {
  // Made on first use, not at import, as the encoders below are.
  keys ??= new Map()
  const id = `${info}\n${secret}`
  const known = keys.get(id)
  if (known !== undefined) return known
  if (keys.size >= MAX_CACHED_KEYS) keys.delete(keys.keys().next().value as string)
  const key = deriveSigningKey(secret, info)
  keys.set(id, key)
  // A failed derivation is not kept, so the next call tries again.
  key.catch(() => {
    if (keys?.get(id) === key) keys.delete(id)
  })
  return key
}

/**
 * HKDF-SHA-256 of the secret's UTF-8 bytes, as a 256-bit HMAC-SHA-256 key.
 * The salt is empty, which RFC 5869 §2.2 reads as HashLen zero bytes: every
 * server that shares the secret must derive the same key, so a salt could
 * only be a constant, and the info already binds the key to its kind.
 */
async function deriveSigningKey(secret: string, info: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', utf8(secret), 'HKDF', false, ['deriveKey'])
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8(info) },
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
