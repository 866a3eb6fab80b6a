/**
 * Updates: a message into a running run that waits for the run's answer
 * (`updateRun`, `ctx.onUpdate`; docs/tasks.md "Updates").
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { ValidationIssue } from './schema.ts'

/** Options of `updateRun`. */
export interface UpdateRunOptions {
  /**
   * The update's id, unique within its run. Sending an id again is asking
   * for the same update: it is kept once, its handler runs once, and every
   * request with the id gets the one answer.
   * @default a random UUID
   */
  id?: string
  /**
   * How long to wait for the answer. Past it `updateRun` throws
   * `UpdateTimeoutError` (HTTP 202 with `status: 'pending'`); the update
   * stays with the run, and a request again with its id gets its answer.
   * @default 30
   */
  timeoutSeconds?: number
}

/**
 * Where an update is: `pending` until the run answers it; `completed` with
 * the handler's `result`; `failed` when its handler threw; `rejected`
 * when the run never ran its handler (its input did not validate, the run
 * declares no handler of its name, or it finished first).
 */
export type UpdateStatus = 'pending' | 'completed' | 'failed' | 'rejected'

/** Why an update was not answered with a result. */
export interface UpdateError {
  /** `UPDATE_FAILED` (the handler threw), `VALIDATION_FAILED`, `UPDATE_NOT_HANDLED` or `RUN_FINISHED`. */
  code: string
  message: string
  /** For `VALIDATION_FAILED`: what the handler's schema found. */
  details?: ValidationIssue[]
  /** For `RUN_FINISHED`: the status the run finished with. */
  runStatus?: string
}

/** An update's answer, once the run gave it (`status` is not `pending`). */
export interface UpdateAnswer {
  status: Exclude<UpdateStatus, 'pending'>
  /** For `completed`: what the handler returned (absent for `undefined`). */
  result?: unknown
  /** For `failed` and `rejected`. */
  error?: UpdateError
  /** When the answer was kept (ISO). */
  answeredAt: string
}

/** An update as a store keeps it. */
export interface UpdateRecord {
  id: string
  runId: string
  name: string
  data?: unknown
  /** When it was sent (ISO). */
  sentAt: string
  status: UpdateStatus
  result?: unknown
  error?: UpdateError
  answeredAt?: string
}

/** What `ctx.onUpdate(name, …)` declares: the input's schema, and the handler that answers. */
export interface UpdateHandler<Input = unknown, Result = unknown> {
  /** Checked before the handler runs; input that fails it is rejected (400) and the run goes on untouched. */
  input?: StandardSchemaV1<unknown, Input>
  handler: (data: Input) => Result | Promise<Result>
}

/** The update calls of a run store (`RunStore.putUpdate` and the rest). */
export interface UpdateStore {
  /**
   * `putUpdate` keeps `update` (status `pending`) unless its run holds
   * one with its id, and resolves to the update held and whether this call
   * kept it, or to `'full'`, keeping nothing, when the run holds
   * `maxPending` pending updates; atomic, like `createRun`.
   */
  putUpdate(update: UpdateRecord, maxPending: number): Promise<{ update: UpdateRecord; kept: boolean } | 'full'>
  /**
   * Gives update `id` of run `runId` its answer if it is still `pending`,
   * in one atomic step, so an update is answered once whoever answers it;
   * resolves to the update as it ends up (`undefined`: no such update).
   */
  answerUpdate(runId: string, id: string, answer: UpdateAnswer): Promise<UpdateRecord | undefined>
  /** Update `id` of run `runId`, or `undefined`. */
  getUpdate(runId: string, id: string): Promise<UpdateRecord | undefined>
  /** The updates run `runId` holds, oldest first; only the pending ones with `{ pending: true }`. */
  listUpdates(runId: string, options?: { pending?: boolean }): Promise<UpdateRecord[]>
}
