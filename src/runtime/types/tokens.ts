/** The tokens of the waits that a token settles (`waitForToken`, `waitForEvent`, `waitForSignal`, callbacks). */
export type TokenStatus = 'waiting' | 'completed' | 'timed_out'

/** A token created by `step.waitForToken`. */
export interface TokenRecord {
  id: string
  runId: string
  stepKey: string
  status: TokenStatus
  /** ISO timestamps. */
  createdAt: string
  timeoutAt?: string
  settledAt?: string
  /** The payload it was completed with. */
  payload?: unknown
  /**
   * `'event'` for the token of a `waitForEvent`, which only a matching event
   * settles, and `'signal'` for a `waitForSignal`'s, which only a signal
   * settles (`takeSignal`); never `completeToken`.
   */
  kind?: 'event' | 'signal'
}
