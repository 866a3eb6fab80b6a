/**
 * Runs one invocation of a task handler: builds `ctx`, enforces the
 * per-attempt timeout, and classifies how the invocation ended. It does not
 * touch run state; the runtime turns the outcome into a transition.
 */
import type { Attempt, RunRecord, StepApi, TaskContext } from '../types.ts'
import { errorMessage } from '../errors.ts'
import type { TaskDefinition } from './definitions.ts'
import { jsonProblem } from './json.ts'
import { createInvocation, createStepApi, reportUnreachedSteps, type StepHost } from './steps.ts'
import type { SuspendSignal } from './suspend.ts'

export type InvocationOutcome =
  | { kind: 'completed'; result: unknown; attempt: Attempt }
  /**
   * `final` is true when another attempt cannot do better: the replay met a
   * step recorded by another kind of call (`StepMismatchError`), and the same
   * code would meet it again.
   */
  | { kind: 'failed'; error: string; attempt: Attempt; final?: boolean }
  /**
   * `swallowed` is true when the handler caught the signal instead of
   * letting it unwind; the run suspends anyway.
   */
  | { kind: 'suspended'; signal: SuspendSignal; swallowed: boolean }

/** Live invocations can be aborted from outside (runtime shutdown, a cancel, a lost lease). */
export interface InvocationHandle {
  readonly outcome: Promise<InvocationOutcome>
  /**
   * Aborts `ctx.signal` and ends the attempt as failed at once. A string
   * becomes an `Error` named `AbortError`; an `Error` is the signal's reason
   * as given. `why` ends the message of a step called afterwards
   * ("… attempt 1 of task "x" was cancelled").
   */
  abort(reason: string | Error, why?: string): void
}

/** The message of a timed-out attempt ("exceeds timeout" fails the attempt). */
export function timeoutMessage(attempt: number, timeoutMs: number): string {
  return `Attempt ${attempt} timed out after ${timeoutMs} ms`
}

export function invoke(def: TaskDefinition, run: RunRecord, host: StepHost): InvocationHandle {
  const inv = createInvocation(run)
  // The step API and the AbortController are built on first use: most
  // invocations of a small task touch neither, and dispatch throughput is
  // dominated by allocation.
  let controller: AbortController | undefined
  let step: StepApi | undefined
  const ctx: TaskContext = {
    attempt: inv.attempt,
    input: run.input,
    get step() {
      return (step ??= createStepApi(inv, host))
    },
    get signal() {
      return (controller ??= new AbortController()).signal
    },
    runId: run.id,
    taskName: run.taskName,
  }
  const startedAt = Date.now()
  let done = false
  let closedBy = 'ended'
  let resolve!: (outcome: InvocationOutcome) => void
  const outcome = new Promise<InvocationOutcome>((r) => {
    resolve = r
  })

  const end = (returned: boolean, value: unknown) => {
    if (done) return
    done = true
    clearTimeout(timer)
    resolve(settle(returned, value))
  }
  const abort = (error: Error, why: string) => {
    if (done) return
    closedBy = why
    // Abort first so the handler sees `ctx.signal.aborted` by the time the
    // attempt is recorded as failed.
    ;(controller ??= new AbortController()).abort(error)
    end(false, error)
  }
  const timer = setTimeout(() => abort(namedError(timeoutMessage(inv.attempt, def.timeout), 'TimeoutError'), 'timed out'), def.timeout)
  callHandler(def, ctx).then(
    (result) => end(true, result),
    (error: unknown) => end(false, error),
  )

  function settle(returned: boolean, value: unknown): InvocationOutcome {
    inv.closed = closedBy
    if (inv.suspension) {
      return { kind: 'suspended', signal: inv.suspension, swallowed: returned || value !== inv.suspension }
    }
    const attempt: Attempt = {
      index: inv.attempt,
      startedAt: new Date(startedAt).toISOString(),
      durationMs: Date.now() - startedAt,
    }
    // A divergence fails the attempt even when the handler caught it and went on.
    if (inv.mismatch) {
      attempt.error = inv.mismatch.message
      return { kind: 'failed', error: attempt.error, attempt, final: true }
    }
    if (returned) {
      const problem = jsonProblem(value)
      if (problem === undefined) {
        reportUnreachedSteps(inv, host.logger)
        return { kind: 'completed', result: value, attempt }
      }
      value = new TypeError(`Task "${def.name}" returned a value that cannot be stored as JSON: ${problem}`)
    }
    // Attempts record a message string only, never a stack.
    const error = errorMessage(value)
    attempt.error = error
    return { kind: 'failed', error, attempt }
  }

  return {
    outcome,
    abort: (reason, why = 'was stopped') => abort(typeof reason === 'string' ? namedError(reason, 'AbortError') : reason, why),
  }
}

function namedError(message: string, name: string): Error {
  const error = new Error(message)
  error.name = name
  return error
}

// Turns a synchronous throw into a rejection and accepts both sync and
// async handlers, without the extra promise and turn of an async wrapper.
function callHandler(def: TaskDefinition, ctx: TaskContext): Promise<unknown> {
  try {
    const value = def.handler(ctx)
    return value instanceof Promise ? value : Promise.resolve(value)
  } catch (error) {
    return Promise.reject(error)
  }
}
