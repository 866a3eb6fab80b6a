/**
 * Results and step outputs are records: the admin surface and the CLI send
 * them as JSON, and a durable store keeps them as JSON. A value JSON cannot
 * hold (a BigInt, a cycle, a throwing `toJSON`, nesting deeper than
 * `MAX_JSON_DEPTH`) is caught where it is produced, so it fails the attempt
 * with a clear message on every store instead of breaking whatever reads
 * the record later. Payloads given in-process (`trigger`, `completeToken`)
 * are checked the same way before anything is stored.
 *
 * The same check measures the value against the payload limit
 * (`maxPayloadBytes`): the text it serializes anyway is the one measured,
 * and its length is remembered for the memory store's byte bound
 * (`jsonLength`), so neither serializes the value again.
 */
import { errorMessage } from '../../errors.ts'
import { isJsonTooDeep, MAX_JSON_DEPTH } from '../../json-depth.ts'

const TOO_DEEP = `it nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`

/** What `checkJson` found wrong with a value. */
export type JsonFault =
  /** It cannot be stored as JSON, and why. */
  | { problem: string; bytes?: undefined }
  /** Its JSON is over the limit: its size in bytes of UTF-8. */
  | { problem?: undefined; bytes: number }

/**
 * The length of the JSON text of objects measured by `checkJson`, by
 * identity. Weak: an entry lives as long as its value, which the memory
 * store keeps for as long as it retains the run.
 */
const measured = new WeakMap<object, number>()

/** Why `value` cannot be stored as JSON, or `undefined` when it can. */
export function jsonProblem(value: unknown): string | undefined {
  return checkJson(value, Infinity)?.problem
}

/**
 * Why `value` cannot be stored as JSON, or its size when its JSON text is
 * over `maxBytes` bytes of UTF-8; `undefined` when it may be stored.
 */
export function checkJson(value: unknown, maxBytes: number): JsonFault | undefined {
  if (typeof value === 'string') {
    // An escape writes at most 6 bytes for one UTF-16 unit (`\u001f`), so
    // most strings are known to fit without serializing them.
    if (value.length * 6 + 2 <= maxBytes) return undefined
    return overLimit(JSON.stringify(value), maxBytes)
  }
  // Other primitives but BigInt always serialize (or are dropped, as
  // `undefined` is), in a few bytes; skipping them keeps the common case free.
  if (value === null || (typeof value !== 'object' && typeof value !== 'bigint')) return undefined
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    // JSON.stringify recurses: a value thousands of levels deep exhausts
    // the stack before any depth check could see its text.
    if (error instanceof RangeError && /stack/i.test(error.message)) return { problem: TOO_DEEP }
    return { problem: errorMessage(error) }
  }
  if (text === undefined) return undefined
  // A value that serializes here may still be too deep to read back or to
  // serialize again inside its run record, from a deeper stack.
  if (isJsonTooDeep(text)) return { problem: TOO_DEEP }
  measured.set(value as object, text.length)
  return overLimit(text, maxBytes)
}

function overLimit(text: string, maxBytes: number): JsonFault | undefined {
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two
  // units, is 4), so short text fits without counting.
  if (text.length * 3 <= maxBytes) return undefined
  const bytes = utf8Length(text)
  return bytes > maxBytes ? { bytes } : undefined
}

/**
 * The length of the JSON text of `value`, in UTF-16 units: what the memory
 * store counts a payload as. An object `checkJson` measured is not
 * serialized again; a string is counted without its escapes.
 */
export function jsonLength(value: unknown): number {
  switch (typeof value) {
    case 'undefined':
      return 0
    case 'string':
      return value.length + 2
    case 'object': {
      if (value === null) return 4
      const known = measured.get(value)
      if (known !== undefined) return known
      let length = 0
      try {
        length = JSON.stringify(value)?.length ?? 0
      } catch {
        // Not JSON: the engine refuses such values before any store sees
        // them; a store used on its own counts it as nothing.
      }
      measured.set(value, length)
      return length
    }
    default:
      return String(value).length
  }
}

/**
 * How many bytes `text` takes in UTF-8, as `TextEncoder` would write it,
 * without encoding it. A lone surrogate counts 3, as the U+FFFD written for it.
 */
export function utf8Length(text: string): number {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) continue
    if (unit < 0x800) bytes += 1
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: 4 bytes for its two units.
      bytes += 2
      i++
    } else bytes += 2
  }
  return bytes
}
