/**
 * Results and step outputs are records: the admin surface and the CLI send
 * them as JSON, and a durable store keeps them as JSON. A value JSON cannot
 * hold (a BigInt, a cycle, a throwing `toJSON`) is caught where it is
 * produced, so it fails the attempt with a clear message on every store
 * instead of breaking whatever reads the record later.
 */
import { errorMessage } from '../errors.ts'

/** Why `value` cannot be stored as JSON, or `undefined` when it can. */
export function jsonProblem(value: unknown): string | undefined {
  // Primitives other than BigInt always serialize (or are dropped, as
  // `undefined` is); skipping them keeps the common case free.
  if (value === null || (typeof value !== 'object' && typeof value !== 'bigint')) return undefined
  try {
    JSON.stringify(value)
    return undefined
  } catch (error) {
    return errorMessage(error)
  }
}
