/**
 * Retry backoff: after attempt
 * n fails and retries remain, wait 100 × 2^(n−1) ms, capped at 30 seconds,
 * before attempt n + 1.
 */

/** First backoff step, in milliseconds. */
export const BACKOFF_BASE_MS = 100

/** Longest wait between two attempts, in milliseconds. */
export const BACKOFF_CAP_MS = 30_000

/**
 * Milliseconds to wait after attempt `failedAttempt` (1-based) failed and
 * before the next attempt starts: 100, 200, 400, … 30000.
 */
export function backoffDelay(failedAttempt: number): number {
  if (!Number.isInteger(failedAttempt) || failedAttempt < 1) {
    throw new RangeError(`backoffDelay() expects a 1-based attempt number (got ${String(failedAttempt)})`)
  }
  // 2^(n−1) overflows to Infinity for huge n; Math.min still caps it.
  return Math.min(BACKOFF_BASE_MS * 2 ** (failedAttempt - 1), BACKOFF_CAP_MS)
}
