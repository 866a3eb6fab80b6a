import type { RunRecord, TaskRuntime } from '../types.ts'

/**
 * Fires every task scheduled on `cron` and resolves when those runs have
 * finished. Every platform's scheduled event (a worker's `scheduled()`, a
 * function platform's cron request or event) ends up here, so cron behaves the
 * same wherever the app runs.
 */
export async function fireCron(runtime: TaskRuntime, cron: string, timezone?: string): Promise<RunRecord[]> {
  const started = await runtime.runScheduled(cron, timezone)
  return Promise.all(started.map((run) => runtime.waitForRun(run.id)))
}

/** A short, JSON-friendly summary of fired runs for platform logs and responses. */
export function summarizeRuns(runs: RunRecord[]): { ok: boolean; runs: Array<Pick<RunRecord, 'id' | 'taskName' | 'status'>> } {
  return {
    ok: runs.every((run) => run.ok),
    runs: runs.map(({ id, taskName, status }) => ({ id, taskName, status })),
  }
}
