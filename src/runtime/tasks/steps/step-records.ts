/**
 * What every durable step is made of (steps.ts, compensations.ts): the
 * host they run on, the prologue that replays a recorded step or refuses a
 * misuse, the record of a step once it ends, the run of a step's function
 * in its span, and the store calls that interrupt the attempt when the
 * store cannot serve them. Edge-safe.
 */
import type { LiveUpdates } from './live-updates.ts'
import type { Logger, RunLogEntry, RunRecord, StepKind, StepRecord, TriggerOptions } from '../../types.ts'
import { DuplicateStepKeyError, StepMismatchError, StoreUnavailableError } from '../../errors.ts'
import { jsonCopy } from '../base/json-copy.ts'
import type { Clock } from '../base/clock.ts'
import { describe } from '../../describe.ts'
import type { RunStore } from '../store/store.ts'
import type { CallbackSigner } from './callbacks.ts'
import type { StepCalls } from './step-calls.ts'
import type { Invocation } from './invocation.ts'
import { ReplayEnd } from './suspend.ts'

/** What steps need from the runtime. */
export interface StepHost {
  store: RunStore
  /** What steps are timed by, and sleeps and token deadlines reckoned from. */
  clock: Clock
  /** Starts a child run (validation applies, as for any payload-bearing path). */
  trigger(name: string, payload: unknown, opts: TriggerOptions): Promise<RunRecord>
  /** Called before every in-process durable wait; logs the one-time note. */
  noteLocalWait(): void
  /** The runtime's logger, for the warning about recorded steps a replay did not reach. */
  logger: Logger
  /** The largest input, result and step output, in bytes of UTF-8 JSON (`maxPayloadBytes`). */
  maxPayloadBytes: number
  /** Told of each entry a run logs with `ctx.log` (and keeps): printed by `svc dev`, exported by telemetry. */
  runLog?: (taskName: string, runId: string, entry: RunLogEntry) => void
  /** Runs the function of each `ctx.step.run` (step-calls.ts): under `svcjs/testing`, its mock, counted. */
  callStep?: StepCalls
  /** Makes callback URLs (callbacks.ts); without it, `createCallback` throws. */
  callbacks?: CallbackSigner
  /** The runs answering updates in this process (live-updates.ts). */
  liveUpdates?: LiveUpdates
}

/** The timing fields of a step that began at `began` and ended at `ended` (ms since the epoch). */
export function stepTiming(began: number, ended: number): { startedAt: string; durationMs: number } {
  return { startedAt: new Date(began).toISOString(), durationMs: Math.max(0, ended - began) }
}

/**
 * Runs a step's function (`ctx.step.run`, `ctx.step.transaction`) in its
 * span, counted as running (`ctx.stream` and `ctx.log` tell its calls from
 * the handler's).
 */
export async function runStep<T>(inv: Invocation, key: string, kind: 'run' | 'transaction', fn: () => T | Promise<T>): Promise<Awaited<T>> {
  const span = inv.span?.step(key, kind)
  inv.stepsRunning++
  inv.running = inv.stepsRunning === 1 ? key : undefined
  let output: Awaited<T>
  try {
    output = await (span === undefined ? fn() : span.run(fn))
  } catch (error) {
    span?.end(error)
    inv.thrown = { key, error }
    throw error
  } finally {
    if (--inv.stepsRunning === 0) inv.running = undefined
  }
  span?.end()
  return output
}

export function recordedCount(inv: Invocation): number {
  let count = 0
  for (const key in inv.steps) if (Object.hasOwn(inv.steps, key)) count++
  return count
}

/**
 * Common prologue of every step: checks the key, stops a handler that
 * carries on after a suspension, a divergence or the end of its attempt,
 * refuses a key already used in this invocation (`DuplicateStepKeyError`),
 * and returns the recorded result, if any, once its kind matches the call.
 */
export function begin(inv: Invocation, key: string, call: string, kind: StepKind): StepRecord | undefined {
  if (typeof key !== 'string' || key === '') {
    throw new TypeError(`ctx.step.${call}(key, …): key must be a non-empty string (got ${describe(key)})`)
  }
  if (inv.closed !== undefined) {
    throw new Error(
      `ctx.step.${call}("${key}") was called after attempt ${inv.attempt} of task "${inv.taskName}" ${inv.closed}; the step did not run`,
    )
  }
  const seen = (inv.seen ??= new Set())
  const used = seen.size
  if (seen.add(key).size === used) throw new DuplicateStepKeyError(key)
  // A handler that caught the signal and went on must not make progress
  // while the run is suspended: every later step unwinds it again.
  if (inv.suspension && inv.updateHandlers === 0) throw inv.suspension
  if (inv.mismatch) throw inv.mismatch
  if (inv.interruption) throw inv.interruption
  if (inv.replayEnd && inv.compensating === 'replaying') throw inv.replayEnd
  const recorded = inv.steps[key]
  // One lookup for a key never recorded; an inherited property is none.
  if (recorded === undefined || !Object.hasOwn(inv.steps, key)) {
    // A run that compensates replays only what it recorded (compensations.ts).
    if (inv.compensating === 'replaying') throw (inv.replayEnd = new ReplayEnd(key))
    return undefined
  }
  inv.met++
  inv.span?.replayed(key, recorded.kind)
  // A record without a kind was written before kinds were kept: it matches any call.
  if (recorded.kind !== undefined && recorded.kind !== kind) throw (inv.mismatch = new StepMismatchError(key, recorded.kind, call))
  // The handler gets an output of its own, as on the first run: one it
  // changes must not change the record a later replay reads (a store that
  // keeps records in memory hands out the same output to every reader).
  const output = recorded.output
  return output !== null && typeof output === 'object' ? { ...recorded, output: jsonCopy(output) } : recorded
}

/** Records step `key`, which began at `began` (ms since the epoch) and ends now. */
export async function record(inv: Invocation, host: StepHost, key: string, kind: StepKind, step: StepRecord, began: number): Promise<void> {
  if (inv.closed !== undefined) {
    // The attempt ended (timed out, typically) while the step ran: its output
    // is dropped and the step runs again on the next attempt: only a live
    // attempt records, so a late write cannot race the retry's own.
    throw new Error(
      `Step "${key}" finished after attempt ${inv.attempt} of task "${inv.taskName}" ${inv.closed}; its output was not recorded`,
    )
  }
  await stored(inv, host.store.saveStep(inv.runId, key, { ...step, kind, ...stepTiming(began, host.clock.now()) }))
}

/**
 * `work`, a call a step makes to the store (or the trigger of a child): a
 * store that cannot serve it interrupts the attempt (`Invocation.interruption`).
 */
export function stored<T>(inv: Invocation, work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    if (error instanceof StoreUnavailableError) inv.interruption ??= error
    throw error
  })
}
