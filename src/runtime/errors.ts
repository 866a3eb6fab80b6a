import type { ValidationIssue } from './types/schema.ts'

/**
 * Base class of the errors svc raises on purpose. `code` is the stable,
 * machine-readable name that HTTP bodies carry next to `error`; `status` is
 * the HTTP status an error maps to.
 */
export class SvcError extends Error {
  readonly code: string
  readonly status: number
  /** Seconds a client should wait before it tries again, answered as `Retry-After`, for an error that passes. */
  readonly retryAfterSeconds?: number
  constructor(message: string, code: string, status = 500) {
    super(message)
    this.name = new.target.name
    this.code = code
    this.status = status
  }

  /** The JSON body of an HTTP error response. */
  toJSON(): Record<string, unknown> {
    return { error: this.message, code: this.code }
  }
}

/** A payload failed its schema. HTTP 400 `VALIDATION_FAILED`. */
export class ValidationError extends SvcError {
  readonly details: ValidationIssue[]
  constructor(details: ValidationIssue[], message = summarize(details)) {
    super(message, 'VALIDATION_FAILED', 400)
    this.details = details
  }

  override toJSON(): Record<string, unknown> {
    return { error: this.message, code: this.code, details: this.details }
  }
}

function summarize(details: ValidationIssue[]): string {
  const first = details[0]
  if (!first) return 'Validation failed'
  const where = first.path.length ? `${first.target}.${first.path.join('.')}` : first.target
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : ''
  return `Validation failed: ${where}: ${first.message}${more}`
}

/** No task is registered under the name. HTTP 404 `TASK_NOT_FOUND`. */
export class TaskNotFoundError extends SvcError {
  readonly taskName: string
  readonly available: string[]
  constructor(taskName: string, available: string[] = []) {
    const list = available.length ? ` Available tasks: ${available.join(', ')}.` : ' No tasks are registered.'
    super(`Unknown task "${taskName}".${list}`, 'TASK_NOT_FOUND', 404)
    this.taskName = taskName
    this.available = available
  }
}

/** A step key was used twice within one run: keys are unique within a run, so replay finds each step. */
export class DuplicateStepKeyError extends SvcError {
  readonly stepKey: string
  constructor(stepKey: string) {
    super(
      `Step key "${stepKey}" is used more than once in this run. Every ctx.step call needs a key that is unique within the run.`,
      'DUPLICATE_STEP_KEY',
      500,
    )
    this.stepKey = stepKey
  }
}

/**
 * A replay reached a recorded step through a call of another kind (`run`
 * recorded, `sleep` now): the code changed under the run. The attempt fails
 * and is not retried, since running the same code again meets the same
 * record. `STEP_MISMATCH`.
 */
export class StepMismatchError extends SvcError {
  readonly stepKey: string
  /** The kind the run recorded for the key. */
  readonly recorded: string
  /** The kind of the call that reached it now. */
  readonly called: string
  constructor(stepKey: string, recorded: string, called: string) {
    super(
      `Step "${stepKey}" was recorded as ctx.step.${recorded} but is now reached through ctx.step.${called}: the task's code changed under this run. ` +
        'Give the changed step a new key, or start a new run',
      'STEP_MISMATCH',
      500,
    )
    this.stepKey = stepKey
    this.recorded = recorded
    this.called = called
  }
}

/**
 * A replay met `ctx.deprecatePatch(id)` in a run that passed that point on
 * the patch's old branch, which the code no longer has: it cannot go on as
 * it went. Fails the attempt without a retry, as `StepMismatchError` does.
 */
export class PatchRemovedError extends StepMismatchError {
  readonly patchId: string
  constructor(patchId: string, stepKey: string) {
    super(stepKey, 'patch', 'deprecatePatch')
    this.patchId = patchId
    this.message =
      `This run passed patch "${patchId}" on its old branch, which this code no longer has (ctx.deprecatePatch("${patchId}")): ` +
      'keep the old branch behind ctx.patched() until no run that started before the patch is left, or cancel this run'
  }
}

/**
 * A run whose version of its task's code no live process serves any more,
 * found due by a process of another version with `versionPolicy: 'fail'`:
 * the run fails with it (docs/deploying.md "Runs across deploys"). `RUN_VERSION_RETIRED`.
 */
export class RunVersionError extends SvcError {
  readonly runId: string
  readonly version: string
  constructor(runId: string, taskName: string, version: string) {
    super(
      `Run ${runId} of task "${taskName}" started on version ${version}, which no live process serves any more, and versionPolicy is 'fail'; ` +
        "start a new run, or deploy with versionPolicy 'migrate' to move such runs to the newest version",
      'RUN_VERSION_RETIRED',
      409,
    )
    this.runId = runId
    this.version = version
  }
}

/**
 * `ctx.step.transaction` on a run store with no database of its own to
 * share with the app (the memory store). `TRANSACTION_UNSUPPORTED`.
 */
export class TransactionUnsupportedError extends SvcError {
  constructor(stepKey: string, store: string) {
    super(
      `ctx.step.transaction("${stepKey}"): the run store (${store}) keeps runs in memory, with no database to commit the step's writes in. ` +
        'Transactional steps need a store on a database: SQLite (SVC_STORE_URL=file:…, the default of svc dev and the node server), ' +
        'Postgres (SVC_STORE_URL=postgres://…) or the tasks Durable Object on Cloudflare',
      'TRANSACTION_UNSUPPORTED',
      500,
    )
  }
}

/**
 * A run store holds as many live runs (scheduled, queued, running or suspended) as
 * its `maxRuns` bound allows, and live runs are never evicted, so it takes
 * no new run until some finish. HTTP 503 `STORE_FULL`: the condition is
 * temporary (RFC 9110 §15.6.4). Stores raise it from `createRun`.
 */
export class StoreFullError extends SvcError {
  readonly maxRuns: number
  /**
   * `Retry-After` of the 503 (RFC 9110 §10.2.3): one default attempt
   * timeout. By then every attempt that was running has finished or timed
   * out, which is how room usually comes back; a store full of delayed or
   * suspended runs answers 503 again, which is the truth.
   */
  override readonly retryAfterSeconds = 30
  /** `message` says which bound is full when it is another than `maxRuns` (the memory store's `maxBytes`). */
  constructor(store: string, maxRuns: number, message?: string) {
    super(
      message ??
        `${store} is full: ${maxRuns} runs are live (scheduled, queued, running or suspended), its maxRuns bound. ` +
          'No new run is accepted until some finish; retry later, or raise maxRuns',
      'STORE_FULL',
      503,
    )
    this.maxRuns = maxRuns
  }
}

/** No run has this id in the run store (it never existed or was evicted). HTTP 404 `RUN_NOT_FOUND`. */
export class RunNotFoundError extends SvcError {
  readonly runId: string
  constructor(runId: string) {
    super(`No run has id "${runId}"; it never existed or was evicted from the run store`, 'RUN_NOT_FOUND', 404)
    this.runId = runId
  }
}

/**
 * The run already finished (completed, failed or cancelled), so it cannot be
 * cancelled (or woken, or sent a signal: `action`). HTTP 409 `RUN_FINISHED`.
 */
export class RunFinishedError extends SvcError {
  readonly runId: string
  readonly runStatus: string
  constructor(runId: string, runStatus: string, action: 'cancelled' | 'woken' | 'signalled' | 'updated' = 'cancelled') {
    const live = action === 'woken' ? 'a sleeping or delayed run' : 'a scheduled, queued, running or suspended run'
    super(`Run "${runId}" already finished (${runStatus}); only ${live} can be ${action}`, 'RUN_FINISHED', 409)
    this.runId = runId
    this.runStatus = runStatus
  }
}

/**
 * The run holds as many signals that no wait took as it may
 * (`MAX_WAITING_SIGNALS`): the send kept nothing. HTTP 429
 * `TOO_MANY_SIGNALS` with `Retry-After`, to be sent again once the run has read some.
 */
export class TooManySignalsError extends SvcError {
  readonly runId: string
  override readonly retryAfterSeconds = 5
  constructor(runId: string, max: number) {
    super(
      `Run "${runId}" holds ${max} signals that no ctx.step.waitForSignal has taken yet, the most it keeps; nothing was kept. Send again once the run has read some`,
      'TOO_MANY_SIGNALS',
      429,
    )
    this.runId = runId
  }
}

/**
 * The run cannot be woken (`TaskRuntime.wake`): it is live, but waits on
 * something other than time, a token, an event, a child run or a slot, or
 * it is running. `waitsOn` says what, and what resumes it instead. HTTP 409
 * `RUN_NOT_SLEEPING`.
 */
export class RunNotSleepingError extends SvcError {
  readonly runId: string
  readonly runStatus: string
  constructor(runId: string, runStatus: string, waitsOn: string) {
    super(
      `Run "${runId}" is not sleeping: ${waitsOn}. Only a run suspended on ctx.step.sleep or sleepUntil, or a delayed run, can be woken`,
      'RUN_NOT_SLEEPING',
      409,
    )
    this.runId = runId
    this.runStatus = runStatus
  }
}

/**
 * A run passed its deadline (`RunRecord.deadline`, from `route.maxDuration`
 * or a trigger's `deadline`): the reason its running attempt's `ctx.signal`
 * is aborted with, and the code of the attempt that fails it.
 */
export class DeadlineExceededError extends SvcError {
  readonly runId: string
  readonly deadline: string
  constructor(runId: string, taskName: string, deadline: string) {
    super(`Run "${runId}" of task "${taskName}" passed its deadline of ${deadline}`, 'DEADLINE_EXCEEDED', 409)
    this.runId = runId
    this.deadline = deadline
  }
}

/**
 * `TaskRuntime.replay(id, { fromStep })` with a key the run neither recorded
 * nor failed at. HTTP 400 `STEP_NOT_RECORDED`.
 */
export class StepNotRecordedError extends SvcError {
  readonly runId: string
  readonly stepKey: string
  constructor(runId: string, stepKey: string, keys: readonly string[]) {
    super(
      `Run "${runId}" has no step "${stepKey}" to replay from: ${keys.length === 0 ? 'it recorded none' : `it can be replayed from ${keys.map((key) => `"${key}"`).join(', ')}`}`,
      'STEP_NOT_RECORDED',
      400,
    )
    this.runId = runId
    this.stepKey = stepKey
  }
}

/** A runtime schedule id the store does not hold (`TaskRuntime.schedules`). HTTP 404 `SCHEDULE_NOT_FOUND`. */
export class ScheduleNotFoundError extends SvcError {
  readonly scheduleId: string
  constructor(scheduleId: string) {
    super(`Schedule "${scheduleId}" not found`, 'SCHEDULE_NOT_FOUND', 404)
    this.scheduleId = scheduleId
  }
}

/** `TaskRuntime.fireSchedule` on a task without a `schedule`. HTTP 400 `NOT_SCHEDULED`. */
export class TaskNotScheduledError extends SvcError {
  readonly taskName: string
  constructor(taskName: string) {
    super(
      `Task "${taskName}" has no schedule, so there is no tick to fire; start a run of it with trigger("${taskName}") or POST /__tasks/${taskName}`,
      'NOT_SCHEDULED',
      400,
    )
    this.taskName = taskName
  }
}

/**
 * A tick of a task's schedule that `TaskRuntime.fireSchedule` asked for
 * started no run, as a tick of the schedule would not have: `reason` says
 * why. HTTP 409 `TICK_SKIPPED`.
 */
export class TickSkippedError extends SvcError {
  readonly taskName: string
  constructor(taskName: string, reason: string) {
    super(`Task "${taskName}" was not fired: ${reason}`, 'TICK_SKIPPED', 409)
    this.taskName = taskName
  }
}

/**
 * The run was cancelled. It is the reason of the `ctx.signal` of the attempt
 * a cancel cut short, and a token of a cancelled run answers HTTP 409
 * `RUN_CANCELLED` when someone completes it.
 */
export class RunCancelledError extends SvcError {
  readonly runId: string
  constructor(runId: string, message = `Run "${runId}" was cancelled`) {
    super(message, 'RUN_CANCELLED', 409)
    this.runId = runId
  }
}

/** A non-2xx answer or a network failure from the task endpoint (`enqueue`). */
export class HttpError extends SvcError {
  constructor(status: number, message: string, code = 'HTTP_ERROR') {
    super(message, code, status)
  }
}

/** The message of anything thrown, without a stack trace. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    const json = JSON.stringify(error)
    if (json !== undefined) return json
  } catch {
    // fall through: not serializable
  }
  return String(error)
}

/**
 * A run store cannot read or write right now: its disk is full, its file is
 * locked by another process for longer than the store waits, the file is
 * read-only, or the disk failed. HTTP 503 `STORE_UNAVAILABLE`: the
 * condition is expected to pass once the operator acts (RFC 9110 §15.6.4).
 * The call that failed changed nothing in the store; `cause` is the
 * driver's error.
 */
export class StoreUnavailableError extends SvcError {
  /** `Retry-After` of the 503 (RFC 9110 §10.2.3), when the store can tell: a database that cannot be reached is probed every few hundred milliseconds. */
  override readonly retryAfterSeconds: number | undefined
  constructor(message: string, options?: { cause?: unknown; retryAfterSeconds?: number }) {
    super(message, 'STORE_UNAVAILABLE', 503)
    if (options && 'cause' in options) this.cause = options.cause
    this.retryAfterSeconds = options?.retryAfterSeconds
  }
}

/**
 * A payload is over its byte limit (RFC 9110 §15.5.14): a request body
 * over the body limit, or an input or token payload over the task
 * runtime's `maxPayloadBytes`. HTTP 413 `PAYLOAD_TOO_LARGE`.
 */
export class PayloadTooLargeError extends SvcError {
  readonly limit: number
  /** Its size in bytes, when it was measured whole (a body is refused before it is read to the end). */
  readonly bytes: number | undefined
  constructor(limit: number, message = `Request body is larger than the ${limit}-byte limit`, bytes?: number) {
    super(message, 'PAYLOAD_TOO_LARGE', 413)
    this.limit = limit
    this.bytes = bytes
  }
}

/**
 * A write of an attempt on a store that several processes share found that
 * this process no longer holds the run's lease: another process took the
 * run over after this one stalled past `leaseMs`, or the run was cancelled
 * or made running again meanwhile. The write changed nothing; the engine
 * aborts the attempt, which records nothing more. `code` `LEASE_LOST`.
 */
export class LeaseLostError extends SvcError {
  readonly runId: string
  constructor(runId: string) {
    super(
      `Run "${runId}" is no longer this process's to write: another process took it over after this one stalled (past leaseMs on Postgres, past its heartbeat on a shared SQLite file), or it was cancelled; nothing was written`,
      'LEASE_LOST',
      409,
    )
    this.runId = runId
  }
}
