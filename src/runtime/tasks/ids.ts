/**
 * Identifiers. Run ids are random UUIDs (Web Crypto, available in Node,
 * workers and function platforms). Everything derived from a run id plus a
 * step key is deterministic, so replaying a handler finds the same token,
 * the same child run and the same timer again.
 */

export function newRunId(): string {
  return crypto.randomUUID()
}

/**
 * The id of the token that `ctx.step.waitForToken(key)` waits for in run
 * `runId`. It is deterministic so a handler can hand it out (in a link or an
 * email) from a `step.run` before it waits; it also appears in the run's
 * `suspended.waitpoint.tokenId`. Run ids are random, so token ids cannot be
 * guessed from a task name.
 */
export function tokenIdFor(runId: string, stepKey: string): string {
  return `${runId}:${stepKey}`
}

/**
 * The idempotency key of a child run started by `step.enqueue` or
 * `step.waitForTask` without an explicit one: a replay finds the child it
 * already started instead of starting another.
 */
export function childIdempotencyKey(parentRunId: string, stepKey: string): string {
  return `step:${parentRunId}:${stepKey}`
}

/** Timer ids: one pending timer per run and purpose. */
export function timerId(runId: string, purpose: 'delay' | 'retry' | 'sleep' | 'token-timeout', stepKey?: string): string {
  return stepKey === undefined ? `${runId}:${purpose}` : `${runId}:${purpose}:${stepKey}`
}
