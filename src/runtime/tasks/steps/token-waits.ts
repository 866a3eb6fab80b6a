/**
 * The wait of `ctx.step.waitForToken` (and of a callback URL): its token,
 * made once per run and step, the timer that times it out, and the step a
 * settled token records (waitpoints.ts). Edge-safe.
 */
import type { StepRecord, Waitpoint } from '../../types.ts'
import { describe } from '../../describe.ts'
import { timerId, tokenIdFor } from '../base/ids.ts'
import type { RunStore, TimerRecord, TokenRecord, TokenStatus } from '../store/store.ts'

/**
 * Begins (or, on a replay, finds again) the token wait of run `runId` at
 * `stepKey`: resolves to the step to record when its token was settled
 * already (parallel waits, a request before the wait, or a replay), else
 * to the waitpoint to suspend on. `now` (epoch ms) is when it begins;
 * `callback` marks the wait of a callback URL.
 */
export async function beginTokenWait(
  store: RunStore,
  runId: string,
  stepKey: string,
  opts: { timeoutSeconds?: number } | undefined,
  now: number,
  callback: boolean,
): Promise<{ step: StepRecord } | { waitpoint: Waitpoint }> {
  const timeoutSeconds = opts?.timeoutSeconds
  if (timeoutSeconds !== undefined && (typeof timeoutSeconds !== 'number' || !Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)) {
    throw new TypeError(
      `ctx.step.waitForToken("${stepKey}"): timeoutSeconds must be a positive finite number (got ${describe(timeoutSeconds)})`,
    )
  }
  const timeoutAt = timeoutSeconds === undefined ? undefined : new Date(now + timeoutSeconds * 1000).toISOString()
  const waiting = { id: tokenIdFor(runId, stepKey), runId, stepKey, status: 'waiting', createdAt: new Date(now).toISOString() } as const
  const token = await store.putToken(timeoutAt === undefined ? waiting : { ...waiting, timeoutAt })
  if (token.status !== 'waiting') return { step: tokenStep(token.status, token.payload) }
  // The deadline is the one the token was created with: a replay that
  // reaches this wait again must not push it back.
  const waitpoint: Waitpoint = { type: 'token', tokenId: token.id }
  if (token.timeoutAt !== undefined) waitpoint.timeoutAt = token.timeoutAt
  if (callback) waitpoint.callback = true
  return { waitpoint }
}

/** The step a wait on `token` records once the token is settled. */
export function settledStep(token: TokenRecord): StepRecord {
  return tokenStep(token.status as Exclude<TokenStatus, 'waiting'>, token.payload)
}

/** What the wait resolves to, from its step's record. */
export function tokenResult<T>(step: StepRecord): { payload?: T } | { timedOut: true } {
  if (step.status === 'timed_out') return { timedOut: true }
  return step.output === undefined ? {} : { payload: step.output as T }
}

/** The timer that times out a token wait at `dueAt`. */
export function tokenTimeout(runId: string, stepKey: string, tokenId: string, dueAt: string): TimerRecord {
  return { id: timerId(runId, 'token-timeout', stepKey), runId, kind: 'token-timeout', stepKey, tokenId, dueAt }
}

export function tokenStep(status: Exclude<TokenStatus, 'waiting'>, payload: unknown): StepRecord {
  if (status === 'timed_out') return { status: 'timed_out' }
  return payload === undefined ? { status: 'completed' } : { status: 'completed', output: payload }
}
