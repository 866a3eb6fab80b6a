import type { RunEnvelope, RunRecord } from './types.ts'

/**
 * The run envelope of a run record, exactly as docs/tasks.md "The run envelope and statuses" describes it: `ok`,
 * `taskName`, `attempts`, `result` (completed runs), `suspended` (while a step
 * waits) and `steps`. Store bookkeeping (ids, timestamps, input) stays out.
 */
export function toEnvelope(run: RunRecord): RunEnvelope {
  const envelope: RunEnvelope = { ok: run.ok, taskName: run.taskName, attempts: run.attempts, steps: run.steps }
  if (run.status === 'completed') envelope.result = run.result
  if (run.suspended) envelope.suspended = run.suspended
  return envelope
}
