/**
 * `sendSignal`, exported from `svcjs`: in-process when a task runtime is
 * active in this process, otherwise `POST /__tasks/runs/<id>/signals/<name>`
 * on the task server (`SVC_TASK_URL`, with `SVC_TASK_SECRET`), as
 * `enqueue()` does (docs/tasks.md "Signals").
 */
import { describe } from '../../describe.ts'
import { signalProblem } from '../../events/rules.ts'
import type { SendSignalOptions, SentSignal } from '../../types/signals.ts'
import { getActiveTaskRuntime } from './active.ts'
import { sendSignalOverHttp } from './client.ts'

/**
 * Sends a signal named `name` with `data` to live run `runId`, which its
 * `ctx.step.waitForSignal` (or `ctx.signals`) for that name takes, now or
 * when it next waits. See `TaskRuntime.sendSignal`.
 */
export async function sendSignal(runId: string, name: string, data?: unknown, options?: SendSignalOptions): Promise<SentSignal> {
  const runtime = getActiveTaskRuntime()
  if (runtime) return runtime.sendSignal(runId, name, data, options)
  const call = `sendSignal(${describe(runId)}, ${describe(name)})`
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new TypeError(`${call}: options must be an object such as { id } (got ${describe(options)})`)
  }
  // Checked here too, so a bad name fails before a request leaves.
  const problem = signalProblem(name, options?.id)
  if (problem) throw new TypeError(`${call}: ${problem}`)
  if (typeof runId !== 'string' || runId === '') throw new TypeError(`${call}: runId must be a run's id (got ${describe(runId)})`)
  return sendSignalOverHttp(runId, name, data, options)
}
