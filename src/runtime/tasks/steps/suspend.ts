/**
 * The suspend signal (a step that hits an unmet wait unwinds the handler with an internal signal; it is not a
 * failure and consumes no attempt).
 *
 * It is deliberately not an `Error`: generic error handling (`instanceof
 * Error` checks, error reporters) should not mistake it for one. It can
 * still be caught by a bare `try { … } catch {}` around a `ctx.step` call,
 * so the handler call (`handler-call.ts`) also remembers the first
 * suspension of an invocation and treats the invocation as suspended even
 * when the handler swallowed the signal and returned. Handlers that wrap steps in `try/catch` should
 * rethrow it: `if (isSuspension(error)) throw error`.
 */
import type { Waitpoint } from '../../types.ts'

// A registered symbol, so two copies of this module (a bundle and the
// source, say) still recognize each other's signal.
const BRAND: unique symbol = Symbol.for('svc.task.suspend')

export class SuspendSignal {
  readonly stepKey: string
  readonly waitpoint: Waitpoint
  readonly [BRAND] = true
  constructor(stepKey: string, waitpoint: Waitpoint) {
    this.stepKey = stepKey
    this.waitpoint = waitpoint
  }

  /** Shown if the signal ever escapes into a log. */
  toString(): string {
    return `SuspendSignal: run suspended at step "${this.stepKey}" (${this.waitpoint.type}); rethrow it, do not catch it`
  }
}

/** True for the suspend signal a `ctx.step` wait throws; rethrow it from `catch` blocks. */
export function isSuspension(value: unknown): value is SuspendSignal {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true
}

const REPLAY_END: unique symbol = Symbol.for('svc.task.replayEnd')

/**
 * What ends the replay of a run that compensates (compensations.ts): the
 * first step it did not record unwinds the handler with it. Not an
 * `Error`, like the suspend signal, and recognized the same way.
 */
export class ReplayEnd {
  readonly stepKey: string
  readonly [REPLAY_END] = true
  constructor(stepKey: string) {
    this.stepKey = stepKey
  }

  toString(): string {
    return `ReplayEnd: the run compensates, and its replay ended at step "${this.stepKey}", which it did not record; rethrow it, do not catch it`
  }
}
