/**
 * One execution of a task's handler, as its steps see it (steps.ts): an
 * attempt, or the replay of one after a resume. It counts the recorded steps
 * it meets, keeps the keys it used, and holds what stops it (a suspension,
 * a divergence, a store that cannot be reached) even if the handler catches
 * it. Edge-safe: no `node:` import.
 */
import type { Logger, RunRecord, StepRecord } from '../../types.ts'
import type { StepMismatchError, StoreUnavailableError } from '../../errors.ts'
import type { ReplayEnd, SuspendSignal } from './suspend.ts'
import type { ExecutionSpan } from '../../telemetry/types.ts'

/** The undo of a completed `ctx.step.run` (its `compensate` option), with the step's output (compensations.ts). */
export interface Compensation {
  key: string
  output: unknown
  undo: (output: unknown) => unknown
}

/** One execution of a handler: an attempt, or the replay of one after a resume. */
export interface Invocation {
  runId: string
  taskName: string
  attempt: number
  /**
   * The steps recorded before this invocation started, which a replay
   * should meet. Read only: it is the run's own record, not a copy, since a
   * run may hold thousands of steps and a key is looked up at most once.
   */
  steps: Readonly<Record<string, StepRecord>>
  /** Keys used by this invocation, each at most once; created by the first step. */
  seen: Set<string> | undefined
  /** How many of the recorded steps this invocation met. */
  met: number
  /** How many `step.run` functions of this invocation are running: `ctx.stream` counts only the calls made outside them (run-chunks.ts). */
  stepsRunning: number
  /** The key of the `step.run` whose function runs, while exactly one does (`ctx.log` entries name it). */
  running: string | undefined
  /** The last error a `step.run` function threw, and its step's key: the attempt's failed step when the handler rethrows it. */
  thrown: { key: string; error: unknown } | undefined
  /** The first suspension raised, kept even if the handler swallows it. */
  suspension: SuspendSignal | undefined
  /** The first divergence met, kept even if the handler catches it: it fails the attempt. */
  mismatch: StepMismatchError | undefined
  /**
   * The first call of a step that the run store could not serve (it is
   * unreachable, its disk is full), kept even if the handler catches it:
   * the attempt is interrupted, not failed, and runs again once the store
   * can be used, without counting as a retry.
   */
  interruption: StoreUnavailableError | undefined
  /** Set once the attempt is over (returned, failed or timed out). */
  closed: string | undefined
  /** With telemetry: the execution's span, which each step's is a child of. */
  span: ExecutionSpan | undefined
  /** The answers of `ctx.patched` in this invocation, by patch id. */
  patches: Map<string, boolean> | undefined
  /** The run's deadline (ISO), which the children it waits on take unless theirs is earlier (deadlines.ts). */
  deadline: string | undefined
  /** The undos of the completed steps this invocation met that have one, in the order it met them (compensations.ts). */
  compensations: Compensation[] | undefined
  /**
   * In an invocation that compensates a run: `replaying` while the handler
   * replays its recorded steps (the first it did not record ends the
   * replay), then `undoing` while the compensations run.
   */
  compensating: 'replaying' | 'undoing' | undefined
  /** The end of a compensating replay, kept even if the handler catches it. */
  replayEnd: ReplayEnd | undefined
  /** The wait the run was woken from to answer updates (`RunRecord.wokenForUpdates`): a sleep there ends when it would have. */
  woken: RunRecord['wokenForUpdates']
  /** While the updates answered before are given again to a handler just declared (run-updates.ts): the steps wait for it. */
  updatesReplay: Promise<void> | undefined
  /**
   * How many update handlers run now: the steps they call go on at once,
   * neither waiting for the replay above nor unwound by a suspension (the
   * last answers are given while the run suspends).
   */
  updateHandlers: number
}

export function createInvocation(
  runId: string,
  taskName: string,
  attempt: number,
  steps: Readonly<Record<string, StepRecord>>,
  span?: ExecutionSpan,
  deadline?: string,
  woken?: RunRecord['wokenForUpdates'],
): Invocation {
  return {
    runId,
    taskName,
    attempt,
    steps,
    seen: undefined,
    met: 0,
    stepsRunning: 0,
    thrown: undefined,
    running: undefined,
    suspension: undefined,
    mismatch: undefined,
    interruption: undefined,
    closed: undefined,
    span,
    patches: undefined,
    deadline,
    compensations: undefined,
    compensating: undefined,
    replayEnd: undefined,
    woken,
    updatesReplay: undefined,
    updateHandlers: 0,
  }
}

/**
 * Logs, once, the recorded steps an invocation returned without reaching.
 * The run still completes: a step left behind (a branch no longer taken)
 * need not be wrong, but it usually means the code changed under the run.
 */
export function reportUnreachedSteps(inv: Invocation, logger: Logger): void {
  const recorded = Object.keys(inv.steps)
  // Every recorded key met is the common case: no lookup per key then.
  if (recorded.length === inv.met) return
  const seen = inv.seen
  // A patch's answer left behind is code that no longer asks: not a step skipped.
  const unreached = recorded.filter((key) => !seen?.has(key) && inv.steps[key].kind !== 'patch')
  if (unreached.length === 0) return
  logger.warn(
    `[svc] task "${inv.taskName}": run ${inv.runId} finished without reaching its recorded step${unreached.length === 1 ? '' : 's'} ` +
      `${unreached.map((key) => `"${key}"`).join(', ')}; the task's code probably changed since they ran`,
  )
}
