/**
 * The errors of an update (`updateRun`, docs/tasks.md "Updates"), and the
 * one that an update's kept answer stands for when it is not a result.
 */
import type { UpdateRecord } from './types/updates.ts'
import { RunFinishedError, SvcError, ValidationError } from './errors.ts'

/** The run's handler of the update threw. HTTP 422 `UPDATE_FAILED`; the run goes on. */
export class UpdateFailedError extends SvcError {
  readonly runId: string
  readonly updateId: string
  constructor(runId: string, updateId: string, name: string, message: string) {
    super(`Update "${name}" (${updateId}) of run "${runId}" failed: ${message}`, 'UPDATE_FAILED', 422)
    this.runId = runId
    this.updateId = updateId
  }
}

/** The run declares no `ctx.onUpdate` handler of the update's name. HTTP 404 `UPDATE_NOT_HANDLED`. */
export class UpdateNotHandledError extends SvcError {
  readonly runId: string
  constructor(runId: string, message: string) {
    super(message, 'UPDATE_NOT_HANDLED', 404)
    this.runId = runId
  }
}

/** The run holds as many unanswered updates as it may (`MAX_PENDING_UPDATES`): nothing was kept. HTTP 429 `TOO_MANY_UPDATES`. */
export class TooManyUpdatesError extends SvcError {
  readonly runId: string
  override readonly retryAfterSeconds = 5
  constructor(runId: string, max: number) {
    super(
      `Run "${runId}" holds ${max} updates it has not answered yet, the most it keeps; nothing was kept. Send again once it has answered some`,
      'TOO_MANY_UPDATES',
      429,
    )
    this.runId = runId
  }
}

/**
 * No answer came within the caller's `timeoutSeconds`. The update stays
 * with the run, which may still answer it: ask again with `updateId` for
 * its answer (HTTP 202 with `status: 'pending'`).
 */
export class UpdateTimeoutError extends SvcError {
  readonly runId: string
  readonly updateId: string
  constructor(runId: string, updateId: string, name: string, seconds: number) {
    super(
      `Run "${runId}" did not answer update "${name}" (${updateId}) within ${seconds} s; it is kept, and the run may still answer it: ask again with id "${updateId}" for its answer`,
      'UPDATE_PENDING',
      504,
    )
    this.runId = runId
    this.updateId = updateId
  }
}

/** The error a kept answer that is not a result stands for; `undefined` for a result (or no answer yet). */
export function updateAnswerError(update: UpdateRecord): SvcError | undefined {
  const { status, error } = update
  if (status === 'pending' || status === 'completed') return undefined
  const message = error?.message ?? `update "${update.name}" was ${status}`
  if (status === 'failed') return new UpdateFailedError(update.runId, update.id, update.name, message)
  switch (error?.code) {
    case 'VALIDATION_FAILED':
      return new ValidationError(error.details ?? [], message)
    case 'RUN_FINISHED':
      return Object.assign(new RunFinishedError(update.runId, error.runStatus ?? 'finished', 'updated'), { message })
    default:
      return new UpdateNotHandledError(update.runId, message)
  }
}
