/**
 * Run tokens: a signed claim that lets its holder read one run, and send
 * it signals when the claim says so, until it expires (docs/realtime.md).
 * The task server checks them on `GET /__tasks/runs/<id>/stream` and
 * `POST /__tasks/runs/<id>/signals/<name>`; an app's server makes them
 * with `createRunToken()` and hands them to its pages.
 *
 * A token is `rt2.<payload>.<signature>`, all of it URL-safe:
 * - `rt2.` names the format, and is signed with the rest, so a signature
 *   made for anything else under the same key never passes as a token;
 * - `<payload>` is the JSON `{"run":"<id>","exp":<Unix seconds>}` in
 *   base64url (RFC 4648 §5, without padding), with `"sig":1` when the
 *   holder may send the run any signal, or `"sig":["<name>",…]` when only
 *   those. Without `sig` the token reads and sends nothing, as every token
 *   made before signals did; a server that predates `sig` ignores it, so
 *   such a token only reads there;
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
 * parsed. Web Crypto exists on every target, so this is edge-safe
 * (base/signing.ts signs and checks).
 */
import { signClaim, verifyClaim } from '../tasks/base/signing.ts'
import { signalNameProblem } from '../events/rules.ts'

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

/** The signals a token lets its holder send: any (`true`), those named, or none (`undefined`). */
export type RunTokenSignals = true | readonly string[] | undefined

export type RunTokenCheck =
  | { ok: true; run: string; expiresAt: number; signals: RunTokenSignals }
  | { ok: false; code: RunTokenProblem; message: string }

/** What a token looks like, for the messages. */
const SHAPE = `${RUN_TOKEN_PREFIX}<payload>.<signature>`

/** What a signed payload must be, for the messages. */
const PAYLOAD = '{ run, exp, sig? }'

/**
 * The signed token for `runId`, valid until `expiresAt` (Unix seconds),
 * that lets its holder send `signals` too. The names are not checked here:
 * `createRunToken()` checks what it is given.
 */
export function signRunToken(runId: string, expiresAt: number, secret: string, signals?: RunTokenSignals): Promise<string> {
  const claim = signals === undefined ? { run: runId, exp: expiresAt } : { run: runId, exp: expiresAt, sig: signals === true ? 1 : signals }
  return signClaim(RUN_TOKEN_PREFIX, claim, secret, RUN_TOKEN_KEY_INFO)
}

/** Whether a token whose claim holds `signals` lets its holder send the signal `name`. */
export function allowsSignal(signals: RunTokenSignals, name: string): boolean {
  return signals === true || signals?.includes(name) === true
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
  const checked = await verifyClaim(token, RUN_TOKEN_PREFIX, secret, RUN_TOKEN_KEY_INFO)
  if ('problem' in checked) {
    if (checked.problem === 'shape') return invalid(`The run token is not ${SHAPE} in base64url`)
    if (checked.problem === 'signature') {
      return invalid(
        'The run token was not signed with the task secret of this server (SVC_TASK_SECRET): it was altered, or signed with another secret',
      )
    }
    return invalid(`The run token is signed, but its payload is not ${PAYLOAD}`)
  }
  const { run, exp, sig } = checked.claim
  const signals = claimedSignals(sig)
  if (typeof run !== 'string' || !Number.isSafeInteger(exp) || signals === null) {
    return invalid(`The run token is signed, but its payload is not ${PAYLOAD}`)
  }
  if (run !== runId) {
    return { ok: false, code: 'RUN_TOKEN_WRONG_RUN', message: `The run token is for another run, not "${runId}"; make one for this run` }
  }
  const expiresAt = exp as number
  if (expiresAt * 1000 <= now) {
    return {
      ok: false,
      code: 'RUN_TOKEN_EXPIRED',
      message: `The run token expired at ${new Date(expiresAt * 1000).toISOString()}; ask the app for a new one`,
    }
  }
  return { ok: true, run, expiresAt, signals }
}

/** The signals of a claim's `sig`: absent, `1`, or a list of signal names; `null` for anything else. */
function claimedSignals(sig: unknown): RunTokenSignals | null {
  if (sig === undefined) return undefined
  if (sig === 1) return true
  if (Array.isArray(sig) && sig.length > 0 && sig.every((name) => signalNameProblem(name) === null)) return sig as string[]
  return null
}

function invalid(message: string): RunTokenCheck {
  return { ok: false, code: 'RUN_TOKEN_INVALID', message }
}
