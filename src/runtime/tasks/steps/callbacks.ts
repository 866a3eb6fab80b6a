/**
 * Callback URLs (`ctx.step.createCallback`; docs/tasks.md "Callback URLs"):
 * a URL that wakes one wait of one run, safe to hand to a third party (a
 * payment provider, an approver's email, another service), which needs no
 * other credential.
 *
 * A callback is a `waitForToken` token (token-waits.ts) made when the
 * callback is, so a request that comes before the run waits is kept, and
 * its URL carries a signed claim of it: `cb1.<payload>.<signature>`, the
 * payload `{ t: <token id>, exp: <Unix ms>, m: <method> }`, signed with a
 * key of its own derived from the task secret (base/signing.ts). The
 * token's own deadline is the claim's `exp`, so every replay of the call
 * hands out the same URL. The first request settles the token (202);
 * later ones find it settled (409) or timed out (410). Edge-safe.
 */
import type { CallbackRequest, StepApi } from '../../types.ts'
import { describe } from '../../describe.ts'
import { type EnvLike, isDevelopmentEnv } from '../../env.ts'
import { tokenSecret } from '../../signing-secret.ts'
import { signClaim, verifyClaim } from '../base/signing.ts'
import { tokenIdFor } from '../base/ids.ts'
import type { TokenRecord } from '../store/store.ts'

/** The format's name, the start of every callback token. */
export const CALLBACK_PREFIX = 'cb1.'
/** The HKDF info that binds the derived key to callback tokens. */
export const CALLBACK_KEY_INFO = 'svc callback v1'
/** Where a callback URL points, under the app's public address. */
export const CALLBACKS_PATH = '/__tasks/callbacks/'
/** Longest callback token checked; a token for the longest run id and step key fits. */
export const MAX_CALLBACK_TOKEN_LENGTH = 2048
/** The longest key of a callback: its URL carries the key, and stays well under `MAX_CALLBACK_TOKEN_LENGTH`. */
export const MAX_CALLBACK_KEY_LENGTH = 256
/** How long a callback waits when the call sets no `timeoutSeconds`: a week. */
export const DEFAULT_CALLBACK_SECONDS = 7 * 24 * 60 * 60
/** The longest a callback waits: a year, as a delay. */
export const MAX_CALLBACK_SECONDS = 365 * 24 * 60 * 60

export type CallbackMethod = 'POST' | 'GET'

/** Makes the URL of a callback: the app's public address and the signed token. */
export interface CallbackSigner {
  /** The URL of token `tokenId`, valid until `expiresAt` (epoch ms) for `method`; throws, naming the fix, when the app cannot make one. */
  url(tokenId: string, expiresAt: number, method: CallbackMethod): Promise<string>
}

/**
 * The signer of `env`: the public address is `SVC_PUBLIC_URL` (its path
 * included, for an app served under a prefix), or in development
 * `http://localhost:<PORT or 3000>`; the key comes from the task secret.
 */
export function callbackSigner(env: EnvLike): CallbackSigner {
  return {
    async url(tokenId, expiresAt, method) {
      const base = publicUrl(env)
      const secret = tokenSecret(env)
      if (secret === undefined) {
        throw new Error('ctx.step.createCallback: set SVC_TASK_SECRET; callback URLs are signed with a key derived from it')
      }
      return `${base}${CALLBACKS_PATH}${await signClaim(CALLBACK_PREFIX, { t: tokenId, exp: expiresAt, m: method }, secret, CALLBACK_KEY_INFO)}`
    },
  }
}

function publicUrl(env: EnvLike): string {
  const given = env.SVC_PUBLIC_URL
  if (given === undefined || given === '') {
    if (isDevelopmentEnv(env)) return `http://localhost:${env.PORT || 3000}`
    throw new Error(
      'ctx.step.createCallback: set SVC_PUBLIC_URL to the address callers reach this app at, such as https://app.example.com (with its path, if the app is served under one)',
    )
  }
  const url = parsedUrl(given)
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new Error(`SVC_PUBLIC_URL must be an http or https URL, such as https://app.example.com (got ${JSON.stringify(given)})`)
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
}

function parsedUrl(text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

/** What a checked callback token names, or why it names nothing. */
export type CallbackCheck =
  | { ok: true; tokenId: string; method: CallbackMethod; expiresAt: number }
  | { ok: false; status: 401 | 410; code: 'CALLBACK_INVALID' | 'CALLBACK_EXPIRED'; message: string }

/** Whether `token` is a callback of this server's, unexpired at `now` (epoch ms). */
export async function verifyCallback(token: string, secret: string, now: number): Promise<CallbackCheck> {
  const invalid = (message: string): CallbackCheck => ({ ok: false, status: 401, code: 'CALLBACK_INVALID', message })
  if (token.length > MAX_CALLBACK_TOKEN_LENGTH) return invalid('The callback URL is longer than any this server makes')
  const checked = await verifyClaim(token, CALLBACK_PREFIX, secret, CALLBACK_KEY_INFO)
  if ('problem' in checked) {
    return invalid(
      checked.problem === 'signature'
        ? 'The callback URL was not signed by this server: it was altered, or made with another SVC_TASK_SECRET'
        : 'The callback URL is not one this server makes',
    )
  }
  const { t, exp, m } = checked.claim
  if (typeof t !== 'string' || !Number.isSafeInteger(exp) || (m !== 'POST' && m !== 'GET')) {
    return invalid('The callback URL is signed, but its claim is not one this server makes')
  }
  if ((exp as number) <= now) {
    return { ok: false, status: 410, code: 'CALLBACK_EXPIRED', message: `The callback expired at ${new Date(exp as number).toISOString()}` }
  }
  return { ok: true, tokenId: t, method: m, expiresAt: exp as number }
}

/** What `ctx.step.createCallback` needs of its invocation. */
export interface CallbackCall {
  runId: string
  /** The clock's time, in epoch ms. */
  now: number
  /** Makes the token, or finds the one made before (`RunStore.putToken`). */
  putToken(token: TokenRecord): Promise<TokenRecord>
  signer: CallbackSigner | undefined
  waitForToken: StepApi['waitForToken']
}

/** `ctx.step.createCallback(key, opts)`: the callback's token, made now or before, its URL, and its wait. */
export async function createCallback(
  call: CallbackCall,
  key: string,
  opts: { timeoutSeconds?: number; method?: CallbackMethod } | undefined,
): Promise<{ id: string; url: string; expiresAt: string; wait(): Promise<CallbackRequest | { timedOut: true }> }> {
  const where = `ctx.step.createCallback(${describe(key)})`
  if (typeof key !== 'string' || key === '' || key.length > MAX_CALLBACK_KEY_LENGTH) {
    throw new TypeError(`${where}: key must be a string of 1 to ${MAX_CALLBACK_KEY_LENGTH} characters, which the URL carries`)
  }
  const { timeoutSeconds = DEFAULT_CALLBACK_SECONDS, method = 'POST' } = opts ?? {}
  if (typeof timeoutSeconds !== 'number' || !(timeoutSeconds > 0) || timeoutSeconds > MAX_CALLBACK_SECONDS) {
    throw new TypeError(
      `${where}: timeoutSeconds must be a number of seconds above 0 and at most ${MAX_CALLBACK_SECONDS} (got ${describe(timeoutSeconds)})`,
    )
  }
  if (method !== 'POST' && method !== 'GET') throw new TypeError(`${where}: method must be 'POST' or 'GET' (got ${describe(method)})`)
  if (!call.signer) throw new Error(`${where}: this task runtime makes no callback URLs`)
  const id = tokenIdFor(call.runId, key)
  const token = await call.putToken({
    id,
    runId: call.runId,
    stepKey: key,
    status: 'waiting',
    createdAt: new Date(call.now).toISOString(),
    timeoutAt: new Date(call.now + timeoutSeconds * 1000).toISOString(),
  })
  const expiresAt = token.timeoutAt ?? new Date(call.now + timeoutSeconds * 1000).toISOString()
  const url = await call.signer.url(id, Date.parse(expiresAt), method)
  return {
    id,
    url,
    expiresAt,
    async wait() {
      const result = await call.waitForToken<CallbackRequest>(key)
      return 'timedOut' in result ? result : (result.payload as CallbackRequest)
    },
  }
}
