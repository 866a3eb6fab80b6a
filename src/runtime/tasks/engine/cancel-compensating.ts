/**
 * `cancel(id, { compensate: true })` (docs/tasks.md "Compensation"): a run
 * cancelled with completed steps to undo runs their compensations, last
 * first, as a run that failed for good does, then ends `cancelled` with
 * them in its record (`compensation.reason: 'cancelled'`). A run with
 * none to undo is cancelled as by a plain `cancel`.
 *
 * - A scheduled, queued or suspended run has no attempt in flight: it
 *   moves to `running` with the compensation begun (a compare-and-set on
 *   its status), its timers go, and it is dispatched: the invocation
 *   replays its recorded steps, ends at the first it did not record (its
 *   wait), and runs the undos (steps/compensations.ts).
 * - A running run is marked, and its attempt here, if any, is stopped
 *   (it records nothing) and dispatched again, now compensating. An
 *   attempt in another process (a store several processes share) is not
 *   reached: it goes to its end, and the run turns to its undos from its
 *   next suspension, failure or retry; should that attempt complete the
 *   run, the run is completed and nothing is undone.
 * Edge-safe.
 */
import type { RunCompensation, RunRecord } from '../../types.ts'
import { RunFinishedError, RunNotFoundError } from '../../errors.ts'
import { isFinished, type RunStore } from '../store/store.ts'

export interface CompensatingCancelParts {
  store: RunStore
  /** Removes the run's timers (its sleep, its delay, its token's deadline). */
  dropTimers(runId: string): Promise<void>
  /** Stops the run's attempt here, if one is in flight, and dispatches the run again once it ends; whether one was. */
  stopHere(runId: string): boolean
  /** Dispatches a run now `running`. */
  start(run: RunRecord): void
}

const WAITING = ['scheduled', 'queued', 'suspended'] as const

/**
 * Begins the compensation of run `id` for a cancel; resolves to the run
 * as it is then, or to `undefined` when it has nothing to undo (a plain
 * cancel follows). Throws for an unknown or finished run.
 */
export async function cancelCompensating(parts: CompensatingCancelParts, id: string): Promise<RunRecord | undefined> {
  const { store } = parts
  for (;;) {
    const run = await store.getRun(id)
    if (!run) throw new RunNotFoundError(id)
    if (isFinished(run.status)) throw new RunFinishedError(id, run.status)
    // Compensating already (it failed for good, or a cancel came first): it goes on.
    if (run.compensation !== undefined) return run
    if (!hasUndos(run)) return undefined
    const compensation: RunCompensation = { reason: 'cancelled', status: 'running', error: `Run "${id}" was cancelled`, failures: 0 }
    if (run.status === 'running') {
      const marked = await store.updateRun(id, { compensation }, { status: 'running' })
      if (!marked) continue
      parts.stopHere(id)
      return marked
    }
    const moved = await store.updateRun(id, { status: 'running', suspended: undefined, compensation }, { status: [...WAITING] })
    // It started, resumed or finished meanwhile: look again.
    if (!moved) continue
    await parts.dropTimers(id)
    parts.start(moved)
    return moved
  }
}

/** Whether the run recorded a completed step with an undo. */
function hasUndos(run: RunRecord): boolean {
  for (const key in run.steps) if (run.steps[key].compensable === true) return true
  return false
}
