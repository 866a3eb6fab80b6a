import type { RunRecord, TaskRuntime } from './types.ts'
import { SvcError } from './errors.ts'

/** What a cron firing reports: each run it started, and whether all of them succeeded. */
export interface CronSummary {
  ok: boolean
  runs: Array<Pick<RunRecord, 'id' | 'taskName' | 'status'>>
}

/**
 * A cron firing in which at least one run failed. Platforms judge a scheduled
 * invocation by whether it threw (a worker's outcome, a Lambda invocation's
 * error, an HTTP status), so a failed task must surface as an error there,
 * naming each failed task and run so the platform's log leads to the run.
 */
export class CronRunFailedError extends SvcError {
  readonly summary: CronSummary

  constructor(cron: string, summary: CronSummary, failed: RunRecord[]) {
    const names = failed.map((run) => {
      const last = run.attempts.at(-1)?.error
      return `${run.taskName} (run ${run.id}${last ? `: ${last}` : ''})`
    })
    super(`Cron "${cron}": ${failed.length} of ${summary.runs.length} scheduled run(s) failed: ${names.join(', ')}`, 'CRON_RUN_FAILED', 500)
    this.summary = summary
  }

  /** The HTTP error body, with the summary of every run. */
  override toJSON(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.summary }
  }
}

/**
 * Fires every task scheduled on `cron`, waits for those runs to finish and
 * resolves with their summary, or rejects with a `CronRunFailedError` when
 * any of them failed. Every platform's scheduled event (a worker's
 * `scheduled()`, a function platform's cron request or event) ends up here,
 * so cron behaves, and fails, the same wherever the app runs. `wait`
 * replaces how the started runs are waited for: a host whose store outlives
 * it waits only until each run ends or suspends, and answers with the runs
 * as they are then.
 */
export async function fireCron(
  runtime: TaskRuntime,
  cron: string,
  timezone?: string,
  wait: (started: RunRecord[]) => Promise<RunRecord[]> = (started) => Promise.all(started.map((run) => runtime.waitForRun(run.id))),
): Promise<CronSummary> {
  const started = await runtime.runScheduled(cron, timezone)
  const runs = await wait(started)
  const summary = summarizeRuns(runs)
  const failed = runs.filter((run) => !run.ok)
  if (failed.length) throw new CronRunFailedError(cron, summary, failed)
  return summary
}

/** A short, JSON-friendly summary of fired runs for platform logs and responses. */
export function summarizeRuns(runs: RunRecord[]): CronSummary {
  return {
    ok: runs.every((run) => run.ok),
    runs: runs.map(({ id, taskName, status }) => ({ id, taskName, status })),
  }
}
