/**
 * How `MemoryRunStore` (memory-store.ts) holds a run and hands out copies
 * (the record with its steps in a log of their own, attempts never changed
 * in place, idempotency keys scoped to their task), and which runs of a
 * task are queued or running (`InFlow`). Edge-safe.
 */
import type { Attempt, RunRecord } from '../../types.ts'
import type { StepLog } from './step-log.ts'

export function isFlowing(run: StoredRun): boolean {
  return run.status === 'queued' || run.status === 'running'
}

/** A run as the store holds it: its steps in a log of their own, when it has any. */
export type StoredRun = Omit<RunRecord, 'steps'> & { steps: StepLog | undefined }

export const byCreation = (a: StoredRun, b: StoredRun) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0)

// Idempotency keys are scoped to their task: two tasks may use the same key.
export function idempotencyScope(taskName: string, key: string): string {
  return `${taskName}\u0000${key}`
}

/**
 * The attempts of every stored run that has none yet, most runs in flight:
 * one array for all of them. Nothing appends in place (`withAttempt` makes
 * a new array), and every copy handed out is a new array.
 */
export const NO_ATTEMPTS: Attempt[] = Object.freeze([]) as unknown as Attempt[]

export function copyAttempt(attempt: Attempt): Attempt {
  return { ...attempt }
}

/**
 * The attempts with a copy of `attempt` after them, in an array of their
 * exact size: `push` onto a run's empty array (most runs end after one
 * attempt) leaves room for 17, which every retained run would carry.
 */
export function withAttempt(attempts: Attempt[], attempt: Attempt): Attempt[] {
  return attempts.concat(copyAttempt(attempt))
}

// Attempts and step records are never changed in place once stored, so a
// copy of the containers is enough to keep callers from changing the store.
export function copyRun(run: StoredRun): RunRecord {
  return { ...run, attempts: run.attempts.slice(), steps: run.steps === undefined ? {} : run.steps.take() }
}

/**
 * Per task, the ids of its queued and running runs: what `startQueued`
 * weighs under a concurrency limit, without a pass over every retained run.
 * Kept only for tasks `startQueued` was asked about, the ones with limits:
 * for the others it would be one more entry per run in flight, never read.
 */
export class InFlow {
  readonly #byTask = new Map<string, Set<string>>()

  /** The ids of a task's queued and running runs, gathered from `runs` the first time it is asked for. */
  of(taskName: string, runs: Iterable<StoredRun>): Set<string> {
    let ids = this.#byTask.get(taskName)
    if (ids === undefined) {
      ids = new Set()
      for (const run of runs) if (run.taskName === taskName && isFlowing(run)) ids.add(run.id)
      this.#byTask.set(taskName, ids)
    }
    return ids
  }

  /** Keeps the ids in step with a run's status, for the tasks it holds. */
  track(run: StoredRun): void {
    const ids = this.#byTask.get(run.taskName)
    if (ids === undefined) return
    if (isFlowing(run)) ids.add(run.id)
    else ids.delete(run.id)
  }
}
