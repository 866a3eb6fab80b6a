/**
 * A run record as a page may see it (`RunProgress`): its status, its
 * steps without their outputs, its timestamps, and its result or error
 * once it has finished. Input and step outputs stay on the server: a run
 * token is often handed to a browser, and it should show no more than
 * progress. The chunks the run sent for its pages (`ctx.stream`) go in
 * events of their own (`run-stream.ts`), so that progress stays small.
 */
import type { RunProgress, RunRecord } from '../types.ts'

export function runProgress(run: RunRecord): RunProgress {
  const steps: RunProgress['steps'] = {}
  for (const key in run.steps) {
    const { status, kind } = run.steps[key]
    steps[key] = kind === undefined ? { status } : { status, kind }
  }
  const progress: RunProgress = {
    id: run.id,
    taskName: run.taskName,
    status: run.status,
    steps,
    attempts: run.attempts.length,
    createdAt: run.createdAt,
  }
  if (run.startedAt !== undefined) progress.startedAt = run.startedAt
  if (run.finishedAt !== undefined) progress.finishedAt = run.finishedAt
  if (run.runAt !== undefined) progress.runAt = run.runAt
  if (run.status === 'completed') progress.result = run.result
  if (run.status === 'failed' || run.status === 'compensation_failed') {
    const error = run.compensation?.error ?? run.attempts.at(-1)?.error
    if (error !== undefined) progress.error = error
  }
  return progress
}
