/**
 * Which writes belong to a run's attempt, for the stores whose leases are
 * fenced (`RunStore.fences`: `SqliteRunStore`, `PostgresRunStore`): those
 * are checked against the fence the attempt's process holds, so a process
 * that lost the run writes nothing more for it. Edge-safe: no `node:` import.
 */
import type { RunStatus } from '../../types.ts'
import type { TimerKind } from '../store/store.ts'

/** The timers an attempt sets for itself, fenced as its other writes: its retry's backoff, its sleeps' and token waits' deadlines. */
export const ATTEMPT_TIMERS: ReadonlySet<TimerKind> = new Set(['retry', 'sleep', 'token-timeout'])

/**
 * Whether an `updateRun` is an attempt's end: only the run's attempt
 * expects the run `running` and nothing else (completed, failed, retried,
 * suspended). A cancel expects any live status; a resume, `suspended`.
 */
export function expectsRunning(expect: { status: RunStatus | readonly RunStatus[] } | undefined): boolean {
  if (expect === undefined) return false
  const { status } = expect
  return typeof status === 'string' ? status === 'running' : status.length === 1 && status[0] === 'running'
}
