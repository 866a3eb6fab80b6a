/**
 * `updateRun`, exported from `svcjs`: in-process when a task runtime is
 * active in this process, otherwise `POST /__tasks/runs/<id>/updates/<name>`
 * on the task server (`SVC_TASK_URL`, with `SVC_TASK_SECRET`), as
 * `sendSignal()` does (docs/tasks.md "Updates").
 */
import { describe } from '../../describe.ts'
import type { UpdateRunOptions } from '../../types/updates.ts'
import { updateRunProblem } from '../engine/update-sends.ts'
import { getActiveTaskRuntime } from './active.ts'
import { updateRunOverHttp } from './update-over-http.ts'

/**
 * Sends update `name` with `data` to live run `runId` and resolves to the
 * run's answer: what its `ctx.onUpdate(name)` handler returned. Rejects
 * with `UpdateFailedError` (the handler threw), `UpdateNotHandledError`,
 * `ValidationError` (the data failed the handler's schema),
 * `RunNotFoundError`, `RunFinishedError`, `TooManyUpdatesError`, or
 * `UpdateTimeoutError` when no answer came within `timeoutSeconds` (the
 * update stays: ask again with its `id`). See `TaskRuntime.updateRun`.
 */
export async function updateRun<Result = unknown>(
  runId: string,
  name: string,
  data?: unknown,
  options?: UpdateRunOptions,
): Promise<Result> {
  const runtime = getActiveTaskRuntime()
  if (runtime) return runtime.updateRun<Result>(runId, name, data, options)
  // Checked here too, so a bad run id, name, id or timeout fails before a request leaves.
  const problem = updateRunProblem(runId, name, options)
  if (problem) throw new TypeError(`updateRun(${describe(runId)}, ${describe(name)}): ${problem}`)
  return (await updateRunOverHttp(runId, name, data, options)) as Result
}
