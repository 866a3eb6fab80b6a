/**
 * Bounds and defaults every run store shares, and their one check, so that
 * a store's default does not depend on importing another store. Edge-safe:
 * no `node:` import.
 */
import { describe } from '../../describe.ts'

/** Default bound of a run store: how many runs it retains (`maxRuns`). */
export const DEFAULT_MAX_RUNS = 10_000
/** Default `leaseMs` of a store shared by processes: how long a claim on an attempt or a timer lasts. */
export const DEFAULT_LEASE_MS = 30_000
/** Default `pollMs` of a store shared by processes: how often an idle process looks for due work. */
export const DEFAULT_POLL_MS = 1000

/** Throws a `TypeError` or `RangeError` naming option `name` of `where` unless `value` is a whole number, `min` or more. */
export function checkWholeNumber(where: string, name: string, value: unknown, min: number): void {
  const message = `${where}: ${name} must be a whole number, ${min} or more (got ${describe(value)})`
  if (typeof value !== 'number') throw new TypeError(message)
  if (!Number.isInteger(value) || value < min) throw new RangeError(message)
}
