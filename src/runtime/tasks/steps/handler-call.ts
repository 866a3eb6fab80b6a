/**
 * One call of a task handler, for one attempt of a run: builds `ctx`,
 * enforces the attempt's timeout, and classifies how the call ended. It
 * does not touch run state: the engine's dispatch (`dispatch.ts`) turns the
 * outcome into a transition. (What `ctx.stream`, `ctx.log` and
 * `ctx.metadata` keep is written by `run-output.ts` before the outcome.)
 */
import type {
  Attempt,
  RunLogEntry,
  RunLogger,
  RunLogLevel,
  RunMetadata,
  RunRecord,
  StepApi,
  StepRecord,
  UpdateHandler,
} from '../../types.ts'
import { DeadlineExceededError, errorMessage } from '../../errors.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import { isoAt, type TimerHandle } from '../base/clock.ts'
import { Expiring } from './attempt-timeouts.ts'
import type { InvocationHandle, InvocationOutcome, Invoker, RunRef } from './invocation-outcome.ts'
import { checkJson } from '../base/json.ts'
import { payloadError } from '../store/payload-limit.ts'
import { MAX_RUN_CHUNK_BYTES } from './run-chunks.ts'
import { logLine } from './run-logs.ts'
import { RunOutputWriter } from './run-output.ts'
import { RunMetadataApi } from './run-metadata.ts'
import { createInvocation, type Invocation, reportUnreachedSteps } from './invocation.ts'
import { createStepApi, patched } from './steps.ts'
import { stepsCalledBy } from './step-calls.ts'
import { hasSteps } from '../store/store.ts'
import { HandlerContext } from './handler-context.ts'
import { COMPENSATED, compensate } from './compensations.ts'
import { deadlineError, untilDeadline } from './deadlines.ts'
import { RunUpdates } from './run-updates.ts'

export type { InvocationHandle, InvocationOutcome, Invoker, RunRef } from './invocation-outcome.ts'

/** The message of a timed-out attempt ("exceeds timeout" fails the attempt). */
export function timeoutMessage(attempt: number, timeoutMs: number): string {
  return `Attempt ${attempt} timed out after ${timeoutMs} ms`
}

/**
 * Runs one invocation of the run's handler. Returns its handle while it is
 * in flight, or `undefined` when it ended at once (`invoker.ended` has had
 * its outcome, or has it once the chunks the handler sent are written).
 */
export function invoke<T extends RunRef>(def: TaskDefinition, run: RunRecord, invoker: Invoker<T>, token: T): InvocationHandle | undefined {
  const call = new Call(def, run, invoker, token)
  return call.done ? undefined : call
}

/**
 * One invocation in flight; its state is fields rather than closures, for
 * the same reason, and its timeout is a place in the engine's `AttemptTimeouts`.
 * It keeps what it needs of the run, not the run's record, which its other
 * holders may let go of while the attempt runs.
 */
class Call<T extends RunRef> extends Expiring implements InvocationHandle {
  readonly #def: TaskDefinition
  readonly #attempt: number
  /** The steps recorded before this invocation; undefined once known to be none. */
  #steps: Readonly<Record<string, StepRecord>> | undefined
  readonly #invoker: Invoker<T>
  /** The engine's entry for the run; the run's id and task are read from it. */
  readonly #token: T
  /**
   * When the attempt started, in milliseconds since `Invoker.origin`: this
   * invocation's start, or, for the replay after a resume, the start the
   * run kept for its attempt (`attemptStarted`), which may be older.
   */
  readonly #startedAt: number
  /** The step bookkeeping, created with the step API. */
  #inv: Invocation | undefined
  #step: StepApi | undefined
  #controller: AbortController | undefined
  /** The run's chunks and log entries when the invocation began, until `ctx.stream` or `ctx.log` makes their writer. */
  #chunkLog: RunRecord['chunks']
  #logLog: RunRecord['logs']
  #output: RunOutputWriter | undefined
  #logger: RunLogger | undefined
  /** The run's metadata, then `ctx.metadata` once used. */
  #metadata: RunMetadataApi | Record<string, unknown> | undefined
  /** The invocation has ended (and `ended` was told, or will be once its chunks are written). */
  done = false
  /** How it ended, for the message of a `ctx.stream` call made afterwards. */
  #closedBy: string | undefined
  /** The run's deadline (ISO), if any, and the timer that aborts the attempt at it when it comes before the timeout. */
  readonly #deadline: string | undefined
  #deadlineTimer: TimerHandle | undefined
  /** The run was woken from a wait to answer updates: the wait, for the invocation's steps. */
  readonly #woken: RunRecord['wokenForUpdates']
  /** The updates this invocation answers, once `ctx.onUpdate` declared a handler (run-updates.ts). */
  #updates: RunUpdates | undefined

  constructor(def: TaskDefinition, run: RunRecord, invoker: Invoker<T>, token: T) {
    super()
    this.#def = def
    this.#invoker = invoker
    this.#token = token
    // Suspensions append no attempt, so every recorded attempt of a running
    // run is a failed one: the next is their count plus one.
    this.#attempt = run.attempts.length + 1
    const kept = run.attemptStarted
    this.#startedAt =
      kept !== undefined && kept.attempt === this.#attempt ? Math.floor(Date.parse(kept.at) - invoker.origin) : sinceOrigin(invoker)
    this.#steps = run.steps
    this.#deadline = run.deadline
    this.#woken = run.wokenForUpdates
    this.#chunkLog = run.chunks
    this.#logLog = run.logs
    this.#metadata = run.metadata
    const ctx = new HandlerContext(this, run, this.#attempt)
    // A run that compensates replays its recorded steps, then runs their undos (compensations.ts).
    const compensating = run.compensation?.status === 'running'
    let value: unknown
    try {
      value = compensating ? compensate(() => def.handler(ctx), this.#invocation(), invoker.host) : def.handler(ctx)
    } catch (error) {
      // A handler that threw before touching ctx.step left nothing in flight.
      if (this.#step === undefined) {
        this.#settle(false, error)
        return
      }
      value = Promise.reject(error)
    }
    // Whether the run has recorded steps is asked only of a handler that has
    // not touched ctx.step, whose invocation would hold them: a replay asks
    // for its first step at once, and telling whether a record of thousands
    // of steps has any costs a pass over its keys (V8 keeps an object that
    // large as a dictionary). A run without steps keeps no empty object.
    if (this.#step === undefined && !hasSteps(run)) this.#steps = undefined
    // A plain value returned by a handler that never touched ctx.step is the
    // outcome at once: nothing is left to time out.
    if (this.#step === undefined && !isThenable(value)) {
      this.#settle(true, value)
      return
    }
    invoker.timeouts.add(this, def.timeout)
    const clock = invoker.host.clock
    // Undos run past the deadline: they are what a run past it needs.
    const left = compensating ? undefined : untilDeadline(run, clock.now())
    if (left !== undefined && left < def.timeout)
      this.#deadlineTimer = clock.setTimer(this.#pastDeadline.bind(this), left, true)
      // Bound methods rather than arrow functions: two of them take less than
      // two closures and the scope they share.
    ;(value instanceof Promise ? value : Promise.resolve(value)).then(this.#returned.bind(this), this.#threw.bind(this))
  }

  #returned(result: unknown): void {
    this.#finishing(true, result)
  }

  #threw(error: unknown): void {
    this.#finishing(false, error)
  }

  /**
   * The handler returned, or threw: a run that returned or suspends answers
   * the updates it holds first, while its steps may still be recorded
   * (an update's handler may call them), then the invocation ends.
   */
  #finishing(returned: boolean, value: unknown): void {
    const final = returned || this.#inv?.suspension !== undefined
    if (this.done || !final || (this.#updates === undefined && this.#woken === undefined)) {
      this.#settle(returned, value)
      return
    }
    this.#runUpdates()
      .close('final')
      .then(() => this.#settle(returned, value))
  }

  step(): StepApi {
    return (this.#step ??= stepsCalledBy(createStepApi(this.#invocation(), this.#invoker.host), this.#invoker.host, this.#token))
  }

  now(): number {
    return this.#invoker.host.clock.now()
  }

  signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal
  }

  stream(name: string, data: unknown): Promise<void> {
    this.#checkOpen(`ctx.stream(${JSON.stringify(name)})`, 'the chunk was not sent')
    return this.#writer().stream(name, data, (this.#inv?.stepsRunning ?? 0) === 0)
  }

  metadata(): RunMetadata {
    const kept = this.#metadata
    if (kept instanceof RunMetadataApi) return kept
    return (this.#metadata = new RunMetadataApi(kept, {
      checkOpen: (call) => this.#checkOpen(call, 'the metadata was not changed'),
      write: (metadata) => this.#writer().metadata(metadata),
    }))
  }

  /** Throws for `call` made once the attempt is over, saying what is `lost`. */
  #checkOpen(call: string, lost: string): void {
    if (this.#closedBy === undefined) return
    throw new Error(`${call} was called after attempt ${this.#attempt} of task "${this.#token.taskName}" ${this.#closedBy}; ${lost}`)
  }

  onUpdate(name: string, update: UpdateHandler): void {
    this.#checkOpen(`ctx.onUpdate(${JSON.stringify(name)})`, 'no handler was declared')
    this.#runUpdates().declare(name, update)
  }

  #runUpdates(): RunUpdates {
    const token = this.#token
    return (this.#updates ??= new RunUpdates(token.id, token.taskName, this.#invoker.host, this.#invocation()))
  }

  patched(id: string, deprecated: boolean): Promise<boolean> {
    return patched(this.#invocation(), this.#invoker.host, id, deprecated)
  }

  logger(): RunLogger {
    return (this.#logger ??= {
      info: (message, attributes) => this.#log('info', message, attributes),
      warn: (message, attributes) => this.#log('warn', message, attributes),
      error: (message, attributes) => this.#log('error', message, attributes),
    })
  }

  #log(level: RunLogLevel, message: unknown, attributes: unknown): void {
    if (this.#closedBy !== undefined) {
      // Logging never throws: an entry after the end goes to the process's log, saying so.
      const token = this.#token
      this.#invoker.host.logger.warn(
        `[svc] task "${token.taskName}": run ${token.id}: ctx.log.${level} was called after attempt ${this.#attempt} ${this.#closedBy}; not kept: ${logLine(level, message, undefined).message}`,
      )
      return
    }
    const inv = this.#inv
    void this.#writer().log(logLine(level, message, attributes), (inv?.stepsRunning ?? 0) === 0, inv?.running)
  }

  #writer(): RunOutputWriter {
    if (this.#output !== undefined) return this.#output
    const host = this.#invoker.host
    const token = this.#token
    const runLog = host.runLog
    return (this.#output = new RunOutputWriter({
      runId: token.id,
      taskName: token.taskName,
      attempt: this.#attempt,
      chunks: this.#chunkLog,
      logs: this.#logLog,
      store: host.store,
      logger: host.logger,
      clock: host.clock,
      maxChunkBytes: Math.min(MAX_RUN_CHUNK_BYTES, host.maxPayloadBytes),
      ...(runLog === undefined ? {} : { onLog: (entry: RunLogEntry) => runLog(token.taskName, token.id, entry) }),
    }))
  }

  abort(reason: string | Error, why = 'was stopped'): void {
    this.#abort(typeof reason === 'string' ? namedError(reason, 'AbortError') : reason, why)
  }

  #invocation(): Invocation {
    const token = this.#token
    const steps = this.#steps ?? NO_STEPS
    return (this.#inv ??= createInvocation(token.id, token.taskName, this.#attempt, steps, token.span, this.#deadline, this.#woken))
  }

  /** The run's deadline has passed: the attempt fails, for good. */
  #pastDeadline(): void {
    const token = this.#token
    this.#abort(deadlineError({ id: token.id, taskName: token.taskName, deadline: this.#deadline }), 'passed its deadline')
  }

  /** The attempt's timeout has passed. */
  expire(): void {
    this.#abort(namedError(timeoutMessage(this.#attempt, this.#def.timeout), 'TimeoutError'), 'timed out')
  }

  #abort(error: Error, why: string): void {
    if (this.done) return
    // Abort first so the handler sees `ctx.signal.aborted` by the time the
    // attempt is recorded as failed.
    this.#controller ??= new AbortController()
    this.#controller.abort(error)
    this.#settle(false, error, why)
  }

  /** Ends the invocation, once. `closedBy` ends the message of a step called afterwards. */
  #settle(returned: boolean, value: unknown, closedBy = 'ended'): void {
    if (this.done) return
    this.done = true
    this.#closedBy = closedBy
    this.#invoker.timeouts.delete(this)
    if (this.#deadlineTimer !== undefined) this.#invoker.host.clock.clearTimer(this.#deadlineTimer)
    const outcome = this.#end(returned, value, closedBy)
    // The chunks and entries sent before the end are written before it, so that the
    // end's write does not race theirs, and the updates it holds are answered
    // before it waits again or finishes; neither rejects.
    const writing = this.#output?.writing()
    const answering = this.#closeUpdates(outcome)
    const before = answering === undefined ? writing : writing === undefined ? answering : Promise.all([writing, answering])
    if (before === undefined) this.#invoker.ended(this.#token, outcome)
    else before.then(() => this.#invoker.ended(this.#token, outcome))
  }

  /** The updates of an invocation that declared handlers, or was woken for them: answered before it suspends or completes, left for the next attempt after a failure. */
  #closeUpdates(outcome: InvocationOutcome): Promise<void> | undefined {
    const final = outcome.kind === 'suspended' || outcome.kind === 'completed'
    if (this.#updates === undefined && (this.#woken === undefined || !final)) return undefined
    return this.#runUpdates().close(final ? 'final' : 'dropped')
  }

  #end(returned: boolean, value: unknown, closedBy: string): InvocationOutcome {
    const inv = this.#inv
    if (inv) {
      inv.closed = closedBy
      if (inv.interruption) return { kind: 'interrupted', error: errorMessage(inv.interruption) }
      if (inv.suspension) {
        return {
          kind: 'suspended',
          signal: inv.suspension,
          swallowed: returned || value !== inv.suspension,
          attemptStarted: { attempt: this.#attempt, at: isoAt(this.#invoker.origin + this.#startedAt) },
        }
      }
    }
    const startedAt = this.#startedAt
    const attempt: Attempt = {
      index: this.#attempt,
      startedAt: isoAt(this.#invoker.origin + startedAt),
      durationMs: sinceOrigin(this.#invoker) - startedAt,
    }
    // A divergence fails the attempt even when the handler caught it and went on.
    if (inv?.mismatch) return failed(inv, attempt, inv.mismatch.message, true)
    // Past the run's deadline, no retry has time left.
    if (value instanceof DeadlineExceededError) {
      attempt.code = 'DEADLINE_EXCEEDED'
      return failed(inv, attempt, value.message, true)
    }
    if (returned && value === COMPENSATED) return { kind: 'compensated', attempt }
    if (returned) {
      const maxBytes = this.#invoker.host.maxPayloadBytes
      const fault = checkJson(value, maxBytes)
      if (fault === undefined) {
        // Steps recorded by earlier invocations and not reached by this one are reported.
        if (inv !== undefined || this.#steps !== undefined) reportUnreachedSteps(this.#invocation(), this.#invoker.host.logger)
        return { kind: 'completed', result: value, attempt }
      }
      // A result too large fails the attempt like any error: retries apply.
      const name = this.#def.name
      value = payloadError(fault, maxBytes, `Task "${name}" returned a value that cannot be stored as JSON`, `Task "${name}" returned`)
    }
    if (inv?.thrown !== undefined && inv.thrown.error === value) attempt.step = inv.thrown.key
    // Attempts record a message string only, never a stack.
    return failed(inv, attempt, errorMessage(value))
  }
}

/** The outcome of a failed attempt, saying whether its undos are to run or were running (compensations.ts). */
function failed(inv: Invocation | undefined, attempt: Attempt, error: string, final?: true): InvocationOutcome {
  attempt.error = error
  const outcome: InvocationOutcome = { kind: 'failed', error, attempt }
  if (final) outcome.final = true
  if (inv?.compensating !== undefined) outcome.compensating = true
  else if (inv?.compensations !== undefined) outcome.compensable = true
  return outcome
}

/**
 * Milliseconds since `invoker.origin`, on its host's clock. `Math.floor`
 * changes no value (both are whole): it makes the difference a small
 * integer rather than the boxed number a subtraction of two epoch times
 * yields, so the fields that hold it, `durationMs` of every recorded
 * attempt among them, stay unboxed.
 */
function sinceOrigin(invoker: Pick<Invoker<RunRef>, 'host' | 'origin'>): number {
  return Math.floor(invoker.host.clock.now() - invoker.origin)
}

const NO_STEPS: Readonly<Record<string, StepRecord>> = Object.freeze({})

function namedError(message: string, name: string): Error {
  const error = new Error(message)
  error.name = name
  return error
}

/** Whether awaiting `value` would adopt it (a promise or another thenable). */
function isThenable(value: unknown): boolean {
  return (
    value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
  )
}
