/**
 * Compensation (docs/tasks.md "Compensation"): a `ctx.step.run` given a
 * `compensate` function undoes its step should the run fail for good.
 *
 * Each step with one is recorded `compensable`, and each invocation keeps
 * the undos of the steps it met. A run that fails for good with undos to
 * run is not failed at once: it is marked `compensation: { status:
 * 'running' }` (engine/attempt-outcome.ts) and invoked again, in
 * compensating mode: the handler replays its recorded steps, and the first
 * step it did not record ends the replay (`ReplayEnd`) rather than run,
 * wait or start anything; then the undos the replay met run, the last
 * step's first, each recorded as a step `compensate:<key>` of kind
 * `compensation`. So an undo cut short by a crash runs again on the next
 * invocation, and one that ended never does. An undo that throws fails the
 * invocation, which is tried again with the task's backoff. Edge-safe.
 */
import { describe } from '../../describe.ts'
import { assertPayload } from '../store/payload-limit.ts'
import type { Compensation, Invocation } from './invocation.ts'
import { begin, record, runStep, type StepHost } from './step-records.ts'

/** What a compensating invocation's handler call resolves to once every undo ran. */
export const COMPENSATED: unique symbol = Symbol('svc.compensated')

/** The step key an undo of step `key` is recorded under. */
export function compensationKey(key: string): string {
  return `compensate:${key}`
}

/** How many times a compensation that throws is tried in all: the task's attempts, and at least this many. */
export const MIN_COMPENSATION_ATTEMPTS = 3

/** Checks `ctx.step.run`'s options; resolves to the undo, if any. */
export function undoOf(key: string, opts: unknown): Compensation['undo'] | undefined {
  if (opts === undefined) return undefined
  const undo = (opts as { compensate?: unknown } | null)?.compensate
  if (opts === null || typeof opts !== 'object' || (undo !== undefined && typeof undo !== 'function')) {
    throw new TypeError(
      `ctx.step.run("${key}", fn, options): options must be an object such as { compensate: (output) => undo(output) } (got ${describe(opts)})`,
    )
  }
  return undo as Compensation['undo'] | undefined
}

/** Keeps the undo of step `key`, which completed with `output`. */
export function noteCompensation(inv: Invocation, key: string, output: unknown, undo: Compensation['undo']): void {
  ;(inv.compensations ??= []).push({ key, output, undo })
}

/**
 * The handler call of a compensating invocation: the replay, however it
 * ends, then the undos it met, last first. Resolves to `COMPENSATED`;
 * rejects with the error of an undo that threw.
 */
export async function compensate(replay: () => unknown, inv: Invocation, host: StepHost): Promise<typeof COMPENSATED> {
  inv.compensating = 'replaying'
  try {
    await replay()
  } catch {
    // The replay ends at the first step the run did not record, with the
    // error the run failed with, or at a return: the undos run either way.
  }
  inv.compensating = 'undoing'
  for (const step of [...(inv.compensations ?? [])].reverse()) await undoStep(inv, host, step)
  return COMPENSATED
}

async function undoStep(inv: Invocation, host: StepHost, step: Compensation): Promise<void> {
  const key = compensationKey(step.key)
  if (begin(inv, key, 'run', 'compensation')) return
  const began = host.clock.now()
  const output = await runStep(inv, key, 'run', () => step.undo(step.output))
  assertPayload(
    output,
    host.maxPayloadBytes,
    `The compensation of step "${step.key}" returned a value that cannot be stored as JSON`,
    `The compensation of step "${step.key}" returned`,
  )
  await record(inv, host, key, 'compensation', output === undefined ? { status: 'completed' } : { status: 'completed', output }, began)
}
