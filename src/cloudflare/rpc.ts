/**
 * Calls from a worker into the tasks Durable Object, over the stub's
 * `fetch`: `POST` with `{ method, args }`, answered `{ value }` or, with
 * status 500, `{ error }`. A plain fetch protocol keeps the object a plain
 * class (no `cloudflare:workers` import), which any bundler and any
 * compatibility date accept.
 *
 * Errors cross as data and are rebuilt as the classes the engine threw, so a
 * worker answers `VALIDATION_FAILED`, `TASK_NOT_FOUND`, `STORE_FULL` or
 * `TOO_MANY_UPDATES` (with its `Retry-After`) exactly as a Node server does,
 * and an update past its wait is an `UpdateTimeoutError` (202 pending).
 */
import { SvcError, StoreFullError, TaskNotFoundError, ValidationError } from '../runtime/errors.ts'
import { TooManyUpdatesError, UpdateFailedError, UpdateNotHandledError, UpdateTimeoutError } from '../runtime/update-errors.ts'
import type { ValidationIssue } from '../types.ts'

/** A call to the object. */
export interface ObjectCall {
  method: string
  args: unknown[]
  /** Positions of `undefined` arguments, which JSON would turn into `null` (a payload left out stays left out). */
  missing?: number[]
  /**
   * Over how many tasks objects the caller spreads runs (its `shards`). An
   * object refuses a count below the highest it has seen: the runs of the
   * objects left out would be out of reach.
   */
  shards?: number
}

interface WireError {
  name: string
  message: string
  code?: string
  status?: number
  details?: ValidationIssue[]
  taskName?: string
  available?: string[]
  maxRuns?: number
  /** The `Retry-After` of an error that passes. */
  retryAfterSeconds?: number
  /** Of an update's errors. */
  runId?: string
  updateId?: string
}

/** The parts of a Durable Object stub the worker uses. */
export interface StubLike {
  fetch(request: Request): Promise<Response>
}

// Any origin: a stub delivers the request to its object whatever the URL says.
const OBJECT_URL = 'https://svc-tasks.internal/'

/** Calls `method` on the object behind `stub` and resolves to its value, or rejects with the rebuilt error. */
export async function callObject(stub: StubLike, method: string, args: unknown[], shards = 1): Promise<unknown> {
  const missing = args.flatMap((arg, i) => (arg === undefined ? [i] : []))
  const body = JSON.stringify({ method, args, missing, shards } satisfies ObjectCall)
  const response = await stub.fetch(new Request(OBJECT_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body }))
  const answer = (await response.json()) as { value?: unknown; error?: WireError }
  if (answer.error) throw decodeError(answer.error)
  return answer.value
}

/**
 * Every call a tasks object answers (`tasks-object.ts`): the runtime's
 * methods a worker forwards, and the calls between the objects of several
 * shards. A name left out here is a type error at the call that makes it;
 * one listed here and not answered is a type error in the object's switch.
 */
export const OBJECT_METHODS = [
  'trigger',
  'triggerMany',
  'getRun',
  'listRuns',
  'waitForRun',
  'completeToken',
  'sendSignal',
  'listSignals',
  'updateRun',
  'listUpdates',
  'sendEvent',
  'sendEvents',
  'listEvents',
  'cancel',
  'replay',
  'wake',
  'fireSchedule',
  'schedules',
  'listTasks',
  'runScheduled',
  'fireCron',
  'listRunsById',
  'eventEffects',
  'childFinished',
] as const

/** A call a tasks object answers. */
export type ObjectMethod = (typeof OBJECT_METHODS)[number]

/** Whether `method`, as a call names it on the wire, is one a tasks object answers. */
export function isObjectMethod(method: unknown): method is ObjectMethod {
  return (OBJECT_METHODS as readonly unknown[]).includes(method)
}

/** A call to the object of each shard: `stub(shard)` is asked for every call, as a stub belongs to the request that made it. */
export type ShardCall = <T>(shard: number, method: ObjectMethod, ...args: unknown[]) => Promise<T>

/** `callObject` on the object of a shard among `shards`, through `stub`. */
export function shardCall(stub: (shard: number) => StubLike, shards: number): ShardCall {
  return <T>(shard: number, method: ObjectMethod, ...args: unknown[]) => callObject(stub(shard), method, args, shards) as Promise<T>
}

/** The arguments of a call, with its `undefined` ones restored. */
export function callArgs(call: ObjectCall): unknown[] {
  const args = Array.isArray(call.args) ? call.args : []
  for (const i of call.missing ?? []) args[i] = undefined
  return args
}

/** The answer the object sends for a call's value or error. */
export function answer(result: { value: unknown } | { error: unknown }): Response {
  if ('error' in result) return Response.json({ error: encodeError(result.error) }, { status: 500 })
  return Response.json(result.value === undefined ? {} : { value: result.value })
}

export function encodeError(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const wire: WireError = { name: error.name, message: error.message }
  if (error instanceof SvcError) {
    wire.code = error.code
    wire.status = error.status
    if (error.retryAfterSeconds !== undefined) wire.retryAfterSeconds = error.retryAfterSeconds
  }
  if (error instanceof UpdateTimeoutError || error instanceof UpdateFailedError) wire.updateId = error.updateId
  if (
    error instanceof UpdateTimeoutError ||
    error instanceof UpdateFailedError ||
    error instanceof UpdateNotHandledError ||
    error instanceof TooManyUpdatesError
  )
    wire.runId = error.runId
  if (error instanceof ValidationError) wire.details = error.details
  if (error instanceof TaskNotFoundError) {
    wire.taskName = error.taskName
    wire.available = error.available
  }
  if (error instanceof StoreFullError) wire.maxRuns = error.maxRuns
  return wire
}

export function decodeError(wire: WireError): Error {
  let error: Error
  switch (wire.code) {
    case 'VALIDATION_FAILED':
      error = new ValidationError(wire.details ?? [], wire.message)
      break
    case 'TASK_NOT_FOUND':
      error = new TaskNotFoundError(wire.taskName ?? '', wire.available)
      break
    case 'STORE_FULL':
      error = new StoreFullError('', wire.maxRuns ?? 0)
      break
    // The update's errors, by the classes callers tell them apart by (an update past its wait is answered 202).
    case 'UPDATE_PENDING':
      error = new UpdateTimeoutError(wire.runId ?? '', wire.updateId ?? '', '', 0)
      break
    case 'UPDATE_FAILED':
      error = new UpdateFailedError(wire.runId ?? '', wire.updateId ?? '', '', wire.message)
      break
    case 'UPDATE_NOT_HANDLED':
      error = new UpdateNotHandledError(wire.runId ?? '', wire.message)
      break
    case 'TOO_MANY_UPDATES':
      error = new TooManyUpdatesError(wire.runId ?? '', 0)
      break
    default:
      if (wire.code !== undefined) error = new SvcError(wire.message, wire.code, wire.status)
      else if (wire.name === 'TypeError') error = new TypeError(wire.message)
      else if (wire.name === 'RangeError') error = new RangeError(wire.message)
      else error = new Error(wire.message)
  }
  error.message = wire.message
  // Another class's wait before a retry, which a plain SvcError would lose.
  if (error instanceof SvcError && error.retryAfterSeconds === undefined && wire.retryAfterSeconds !== undefined)
    Object.defineProperty(error, 'retryAfterSeconds', { value: wire.retryAfterSeconds, enumerable: true })
  return error
}
