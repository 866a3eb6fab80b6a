/**
 * Results and step outputs are records: the admin surface and the CLI send
 * them as JSON, and a durable store keeps them as JSON. A value JSON cannot
 * hold (a BigInt, a cycle, a throwing `toJSON`, nesting deeper than
 * `MAX_JSON_DEPTH`) is caught where it is produced, so it fails the attempt
 * with a clear message on every store instead of breaking whatever reads
 * the record later. Payloads given in-process (`trigger`, `completeToken`)
 * are checked the same way before anything is stored.
 */
import { errorMessage } from '../errors.ts'
import { isJsonTooDeep, MAX_JSON_DEPTH } from '../json-depth.ts'

const TOO_DEEP = `it nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`

/** Why `value` cannot be stored as JSON, or `undefined` when it can. */
export function jsonProblem(value: unknown): string | undefined {
  // Primitives other than BigInt always serialize (or are dropped, as
  // `undefined` is); skipping them keeps the common case free.
  if (value === null || (typeof value !== 'object' && typeof value !== 'bigint')) return undefined
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    // JSON.stringify recurses: a value thousands of levels deep exhausts
    // the stack before any depth check could see its text.
    if (error instanceof RangeError && /stack/i.test(error.message)) return TOO_DEEP
    return errorMessage(error)
  }
  // A value that serializes here may still be too deep to read back or to
  // serialize again inside its run record, from a deeper stack.
  return text !== undefined && isJsonTooDeep(text) ? TOO_DEEP : undefined
}
