/**
 * What an invocation of a task handler (handler-call.ts) tells the engine
 * that starts it: how it ended, the handle that aborts it, and what it
 * needs of the engine. Edge-safe.
 */
import type { Attempt } from '../../types.ts'
import type { ExecutionSpan } from '../../telemetry/types.ts'
import type { AttemptTimeouts } from './attempt-timeouts.ts'
import type { StepHost } from './step-records.ts'
import type { SuspendSignal } from './suspend.ts'

export type InvocationOutcome =
  | { kind: 'completed'; result: unknown; attempt: Attempt }
  /**
   * `final` is true when another attempt cannot do better: the replay met a
   * step recorded by another kind of call (`StepMismatchError`), and the same
   * code would meet it again.
   */
  | {
      kind: 'failed'
      error: string
      attempt: Attempt
      final?: boolean
      /** The invocation met completed steps with undos: should the run fail for good, they run (compensations.ts). */
      compensable?: true
      /** The invocation compensated the run, and an undo failed. */
      compensating?: true
    }
  /** The invocation compensated the run: every undo it met ran (compensations.ts). */
  | { kind: 'compensated'; attempt: Attempt }
  /**
   * `swallowed` is true when the handler caught the signal instead of
   * letting it unwind; the run suspends anyway.
   */
  | { kind: 'suspended'; signal: SuspendSignal; swallowed: boolean; attemptStarted: { attempt: number; at: string } }
  /**
   * The run store could not serve one of the attempt's steps (its
   * database unreachable, its disk full): not the task's failure. Nothing
   * of how the attempt ended is recorded, and it runs again once the store
   * can be used, as the same attempt.
   */
  | { kind: 'interrupted'; error: string }

/** A call in flight can be aborted from outside (the engine closing, a cancel, a lost lease). */
export interface InvocationHandle {
  /**
   * Aborts `ctx.signal` and ends the attempt as failed at once. A string
   * becomes an `Error` named `AbortError`; an `Error` is the signal's reason
   * as given. `why` ends the message of a step called afterwards
   * ("… attempt 1 of task "x" was cancelled").
   */
  abort(reason: string | Error, why?: string): void
}

/** What an invocation knows of its run from the token it is started with. */
export interface RunRef {
  readonly id: string
  readonly taskName: string
  /** With telemetry: the span of this execution, which its steps' spans are children of. */
  readonly span?: ExecutionSpan | undefined
}

/**
 * What invocations need from the engine that starts them, one for all of
 * them: an attempt in flight holds this and its own token (the engine's
 * entry for the run) rather than callbacks of its own.
 */
export interface Invoker<T extends RunRef> {
  readonly host: StepHost
  /**
   * The instant, on the host's clock, that attempt times are kept as
   * milliseconds since: a number that size is a small integer to V8, held
   * in the field itself, where an epoch time takes a 16-byte box of its own
   * in every attempt in flight (up to 2^30 ms, twelve days after it; past
   * that the numbers are boxed again).
   */
  readonly origin: number
  /** Where attempts wait for their timeout. */
  readonly timeouts: AttemptTimeouts
  /**
   * How the invocation ended; called once, with the token it was started
   * with. When the handler returned a plain value (or threw) without
   * touching `ctx.step`, it is called before `invoke` returns.
   */
  ended(token: T, outcome: InvocationOutcome): void
}
