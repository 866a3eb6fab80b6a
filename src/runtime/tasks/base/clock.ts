/**
 * Timestamps of run records, as ISO 8601 text. A busy engine stamps many
 * records within one millisecond (a run's creation, its attempt, its end),
 * so the text of the last millisecond stamped is kept: they share one
 * string instead of each building a `Date` and its text. Edge-safe.
 */

let lastMs = Number.NaN
let lastText = ''

/** The ISO 8601 text of `ms` (epoch milliseconds). */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString()
    lastMs = ms
  }
  return lastText
}

/** The ISO 8601 text of now. */
export function isoNow(): string {
  return isoAt(Date.now())
}
