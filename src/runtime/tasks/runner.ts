/**
 * Runs one invocation of a task handler: builds `ctx`, enforces the
 * per-attempt timeout, and classifies how the invocation ended. It does not
 * touch run state; the runtime turns the outcome into a transition.
 */
import type { Attempt, RunRecord, TaskContext } from '../../types.ts'
import { errorMessage } from '../errors.ts'
import type { TaskDefinition } from './definitions.ts'
import { createInvocation, createStepApi, type StepHost } from './steps.ts'
import type { SuspendSignal } from './suspend.ts'

export type InvocationOutcome =
  | { kind: 'completed'; result: unknown; attempt: Attempt }
  | { kind: 'failed'; error: string; attempt: Attempt }
  /**
   * `swallowed` is true when the handler caught the signal instead of
   * letting it unwind; the run suspends anyway.
   */
  | { kind: 'suspended'; signal: SuspendSignal; swallowed: boolean }

/** Live invocations can be aborted from outside (runtime shutdown). */
export interface InvocationHandle {
  readonly outcome: Promise<InvocationOutcome>
  abort(reason: string): void
}

/** The message of a timed-out attempt (spec: "exceeds timeout" fails the attempt). */
export function timeoutMessage(attempt: number, timeoutMs: number): string {
  return `Attempt ${attempt} timed out after ${timeoutMs} ms`
}

export function invoke(def: TaskDefinition, run: RunRecord, host: StepHost): InvocationHandle {
  const inv = createInvocation(run)
  const controller = new AbortController()
  const ctx: TaskContext = {
    attempt: inv.attempt,
    input: run.input,
    step: createStepApi(inv, host),
    signal: controller.signal,
    runId: run.id,
    taskName: run.taskName,
  }
  const startedAt = Date.now()
  let stop!: (error: Error) => void
  const stopped = new Promise<never>((_, reject) => {
    stop = reject
  })
  let closedBy = 'ended'
  const abort = (message: string, name: string, why: string) => {
    if (controller.signal.aborted) return
    closedBy = why
    const error = new Error(message)
    error.name = name
    // Abort first so the handler sees `ctx.signal.aborted` by the time the
    // attempt is recorded as failed.
    controller.abort(error)
    stop(error)
  }
  const timer = setTimeout(
    () => abort(timeoutMessage(inv.attempt, def.timeout), 'TimeoutError', 'timed out'),
    def.timeout,
  )

  const outcome = Promise.race([callHandler(def, ctx), stopped]).then(
    (result) => settle(true, result),
    (error: unknown) => settle(false, error),
  )

  function settle(returned: boolean, value: unknown): InvocationOutcome {
    clearTimeout(timer)
    const durationMs = Date.now() - startedAt
    inv.closed = closedBy
    if (inv.suspension) {
      return { kind: 'suspended', signal: inv.suspension, swallowed: returned || value !== inv.suspension }
    }
    const attempt: Attempt = { index: inv.attempt, startedAt: new Date(startedAt).toISOString(), durationMs }
    if (returned) return { kind: 'completed', result: value, attempt }
    // Spec "Errors": attempts record a message string only, never a stack.
    const error = errorMessage(value)
    attempt.error = error
    return { kind: 'failed', error, attempt }
  }

  return { outcome, abort: (reason) => abort(reason, 'AbortError', 'was stopped') }
}

// An async wrapper turns a synchronous throw into a rejection and accepts
// both sync and async handlers.
async function callHandler(def: TaskDefinition, ctx: TaskContext): Promise<unknown> {
  return await def.handler(ctx)
}
