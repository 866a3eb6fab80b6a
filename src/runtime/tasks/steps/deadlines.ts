/**
 * Deadlines: when a whole run must be over (`RunRecord.deadline`), sleeps,
 * waits and retries included. A run gets one from its trigger's `deadline`,
 * its task's `route.maxDuration` (from when it is due) and, as a child of
 * `ctx.step.waitForTask`, its parent's: the earliest applies.
 *
 * Past it, the run fails with `DEADLINE_EXCEEDED`, for good:
 * - a running attempt is aborted through `ctx.signal` when the time comes
 *   (handler-call.ts), and its failure is final;
 * - an attempt about to start is not started (engine/attempt-calls.ts), and a
 *   retry is armed no later than the deadline (engine/attempt-outcome.ts);
 * - a run that waits (scheduled, queued, suspended) is failed by its
 *   `deadline` timer (`expireRun`, from waitpoints.ts), armed when the run
 *   is created (engine/run-creation.ts).
 *
 * The timer is durable like every other: a deadline that passes while no
 * process runs is applied when one starts (recovery re-arms a timer that a
 * crash kept from being written, `missingDeadlines`). Edge-safe.
 */
import type { Attempt, RunRecord } from '../../types.ts'
import { DeadlineExceededError } from '../../errors.ts'
import { type Clock, instantMs, isoAt } from '../base/clock.ts'
import { timerId } from '../base/ids.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import { isFinished, type RunStore, type TimerRecord } from '../store/store.ts'

/** How soon a deadline timer that found its run running looks again: its attempt fails it, unless it suspended meanwhile. */
const RUNNING_RECHECK_MS = 1000

/** The deadline of a run of `def` due at `dueMs` and given `given` (ISO): the earlier of the two, if any. */
export function runDeadline(def: TaskDefinition, given: string | undefined, dueMs: number): string | undefined {
  const fromRoute = def.maxDurationMs === undefined ? undefined : isoAt(dueMs + def.maxDurationMs)
  if (given === undefined) return fromRoute
  return fromRoute === undefined || Date.parse(given) < Date.parse(fromRoute) ? given : fromRoute
}

/** The earlier of `given` (a trigger's `deadline` as its caller gave it, checked already) and `inherited` (ISO). */
export function earlierDeadline(given: Date | string | number | undefined, inherited: string): string {
  if (given === undefined) return inherited
  const ms = instantMs(given, true)
  return ms < Date.parse(inherited) ? isoAt(ms) : inherited
}

/** Whether `run` has a deadline and it has passed at `nowMs`. */
export function pastDeadline(run: Pick<RunRecord, 'deadline'>, nowMs: number): boolean {
  return run.deadline !== undefined && Date.parse(run.deadline) <= nowMs
}

/** Milliseconds left before `run`'s deadline at `nowMs` (0 once past); undefined without one. */
export function untilDeadline(run: Pick<RunRecord, 'deadline'>, nowMs: number): number | undefined {
  return run.deadline === undefined ? undefined : Math.max(0, Date.parse(run.deadline) - nowMs)
}

/** The error of a run past its deadline. */
export function deadlineError(run: Pick<RunRecord, 'id' | 'taskName' | 'deadline'>): DeadlineExceededError {
  return new DeadlineExceededError(run.id, run.taskName, run.deadline!)
}

/**
 * The attempt that records `run`'s failure at its deadline: the attempt it
 * was in (a suspended run's, from when it started), or one that never ran.
 */
export function deadlineAttempt(run: RunRecord, nowMs: number): Attempt {
  const index = run.attempts.length + 1
  const kept = run.attemptStarted?.attempt === index ? Date.parse(run.attemptStarted.at) : nowMs
  return {
    index,
    startedAt: isoAt(kept),
    durationMs: Math.max(0, nowMs - kept),
    error: deadlineError(run).message,
    code: 'DEADLINE_EXCEEDED',
  }
}

/** The timer that fails `run` at its deadline. */
export function deadlineTimer(run: Pick<RunRecord, 'id' | 'deadline'>, dueAt = run.deadline!): TimerRecord {
  return { id: timerId(run.id, 'deadline'), runId: run.id, kind: 'deadline', dueAt }
}

/**
 * What a `deadline` timer does to run `runId`: a run that waits (scheduled,
 * queued or suspended) past its deadline is failed, a compare-and-set on
 * the status it was read in; the failed run is the answer, or, for a run
 * with steps to undo, the run moved to `running` to compensate, which the
 * caller dispatches (compensations.ts). A running run is
 * its attempt's to fail: the timer is armed again a moment later (`again`),
 * in case the attempt suspended meanwhile. A finished run, or one whose
 * deadline has not come (a timer from another process's clock), is left.
 */
export async function expireRun(
  store: RunStore,
  clock: Clock,
  runId: string,
  again: (timer: TimerRecord) => Promise<void>,
): Promise<RunRecord | undefined> {
  const run = await store.getRun(runId)
  // A run that compensates ends once its undos ran, past its deadline.
  if (run?.deadline === undefined || isFinished(run.status) || run.compensation !== undefined) return undefined
  const now = clock.now()
  if (!pastDeadline(run, now)) return void (await again(deadlineTimer(run)))
  if (run.status === 'running') return void (await again(deadlineTimer(run, isoAt(now + RUNNING_RECHECK_MS))))
  const attempt = deadlineAttempt(run, now)
  const left = { suspended: undefined, attemptStarted: undefined, attempt }
  // With steps to undo, it goes on compensating rather than fail (compensations.ts).
  if (Object.values(run.steps).some((step) => step.compensable)) {
    const compensation = { reason: 'failed' as const, status: 'running' as const, error: attempt.error!, failures: 0 }
    return store.updateRun(runId, { ...left, status: 'running', compensation }, { status: run.status })
  }
  return store.updateRun(runId, { ...left, status: 'failed', ok: false, finishedAt: isoAt(now) }, { status: run.status })
}

/**
 * The deadline timers that `runs` (live runs, as recovery reads them) lack
 * among `timers` (the store's): a process that died between recording a
 * run and its timer left none.
 */
export function missingDeadlines(runs: readonly RunRecord[], timers: readonly TimerRecord[]): TimerRecord[] {
  const armed = new Set(timers.filter((timer) => timer.kind === 'deadline').map((timer) => timer.runId))
  return runs.filter((run) => run.deadline !== undefined && !armed.has(run.id)).map((run) => deadlineTimer(run))
}
