/**
 * The entry of a run the engine dispatches (`Dispatcher`, dispatch.ts):
 * from the start of its attempt to the end of what follows (the run's end
 * written, a retry armed, a lease released). A plain object with every
 * field declared, and no promise of its own until `drain()` or `sweep()`
 * asks for one: with many runs in flight, what each one holds is what the
 * engine holds. Edge-safe.
 */
import type { RunRecord } from '../../types.ts'
import type { InvocationHandle } from '../steps/handler-call.ts'
import type { ExecutionSpan } from '../../telemetry/types.ts'

export class InFlight {
  /**
   * The run's id and task, not its record: the attempt holds what it needs
   * of that, and a record the caller of `trigger()` let go is not kept.
   */
  readonly id: string
  readonly taskName: string
  /** The run's deadline (ISO), if any: its retries are armed no later (attempt-outcome.ts). */
  readonly deadline: string | undefined
  /** The attempt, while it runs. */
  handle: InvocationHandle | undefined = undefined
  /** With telemetry: the span of the execution under way. */
  span: ExecutionSpan | undefined = undefined
  /** Dispatch again once this invocation ends. */
  again = false
  /** On a shared store: the attempt runs under this engine's lease on the run. */
  leased: boolean
  /**
   * The run was cancelled, or its lease lost, during this dispatch: the
   * attempt is aborted and nothing it ends with is recorded.
   */
  stopped = false
  /** Its handler holds a slot of `maxConcurrentRuns` (handler-slots.ts). */
  slot = false
  /** The attempt is over and how it ended is being written (outcome-writes.ts). */
  writing = false
  /** The run's end is written and its waiters answered: a later waiter reads the store. */
  ended = false
  #over = false
  /** What `done()` handed out, and how to settle it: made only when asked for. */
  #drained: { promise: Promise<void>; resolve: () => void } | undefined = undefined

  constructor(run: RunRecord, leased: boolean) {
    this.id = run.id
    this.taskName = run.taskName
    this.deadline = run.deadline
    this.leased = leased
  }

  /** Settles once the dispatch is over: the invocation, its transition and any re-dispatch started. */
  done(): Promise<void> {
    if (this.#over) return Promise.resolve()
    if (this.#drained === undefined) {
      let resolve!: () => void
      const promise = new Promise<void>((settle) => {
        resolve = settle
      })
      this.#drained = { promise, resolve }
    }
    return this.#drained.promise
  }

  /** The dispatch is over. */
  finish(): void {
    this.#over = true
    this.#drained?.resolve()
  }
}
