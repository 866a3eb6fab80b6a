/**
 * What a `waitForToken` wait is made of besides its token: the timer that
 * times it out, and the step a settled token records (waitpoints.ts).
 * Edge-safe.
 */
import type { StepRecord } from '../../types.ts'
import { timerId } from '../base/ids.ts'
import type { TimerRecord, TokenStatus } from '../store/store.ts'

/** The timer that times out a token wait at `dueAt`. */
export function tokenTimeout(runId: string, stepKey: string, tokenId: string, dueAt: string): TimerRecord {
  return { id: timerId(runId, 'token-timeout', stepKey), runId, kind: 'token-timeout', stepKey, tokenId, dueAt }
}

export function tokenStep(status: Exclude<TokenStatus, 'waiting'>, payload: unknown): StepRecord {
  if (status === 'timed_out') return { status: 'timed_out' }
  return payload === undefined ? { status: 'completed' } : { status: 'completed', output: payload }
}
