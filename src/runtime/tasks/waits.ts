/**
 * Waitpoints and timers: how a suspended run comes back (spec "States and
 * transitions": suspended → running when the waitpoint completes). A timer,
 * a child's completion or a token's completion records the awaited step and
 * re-dispatches the same run, which replays from its first line.
 *
 * Every timer is recorded in the store before it is armed in-process, so a
 * durable store can re-arm it after a restart (`recoverRuns`).
 */
import type { CompleteTokenResult, Logger, RunRecord, StepRecord } from '../../types.ts'
import { errorMessage } from '../errors.ts'
import { timerId } from './ids.ts'
import { jsonProblem } from './json.ts'
import { childRunResult } from './steps.ts'
import { isFinished, type RunStore, type TimerRecord, type TokenRecord, type TokenStatus } from './store.ts'
import type { TimerSet } from './timers.ts'

/** What waits need from the engine. */
export interface WaitHost {
  readonly store: RunStore
  readonly timers: TimerSet
  readonly logger: Logger
  readonly closed: boolean
  /** Starts an invocation of a running run. */
  dispatch(run: RunRecord): void
  /**
   * Resumes `parentId` too when `childId` finishes. For children that were
   * not started by the run that waits for them (see `armWaitpoint`).
   */
  watchChild(childId: string, parentId: string): void
}

/**
 * Records the step a waitpoint was waiting on and re-dispatches the run. A
 * no-op (false) when the run is no longer suspended at that step, so every
 * path that may resume a run can try without coordination.
 */
export async function resume(host: WaitHost, runId: string, stepKey: string, step: StepRecord): Promise<boolean> {
  const run = await host.store.getRun(runId)
  if (!run || run.status !== 'suspended' || run.suspended?.stepKey !== stepKey) return false
  await host.store.saveStep(runId, stepKey, step)
  const resumed = await host.store.updateRun(runId, { status: 'running', suspended: undefined }, { status: 'suspended' })
  if (!resumed) return false
  host.dispatch(resumed)
  return true
}

/**
 * Arranges for a suspended run's waitpoint to resume it, and resumes it at
 * once if the waitpoint was met while the run was suspending (a fast child,
 * a token completed in between).
 */
export async function armWaitpoint(host: WaitHost, run: RunRecord): Promise<void> {
  if (run.status !== 'suspended' || !run.suspended) return
  const { stepKey, waitpoint } = run.suspended
  if (waitpoint.type === 'sleep') {
    const id = timerId(run.id, 'sleep', stepKey)
    await armTimer(host, { id, runId: run.id, kind: 'sleep', stepKey, dueAt: waitpoint.until })
  } else if (waitpoint.type === 'token') {
    if (waitpoint.timeoutAt !== undefined) {
      await armTimer(host, {
        id: timerId(run.id, 'token-timeout', stepKey),
        runId: run.id,
        kind: 'token-timeout',
        stepKey,
        tokenId: waitpoint.tokenId,
        dueAt: waitpoint.timeoutAt,
      })
    }
    const token = await host.store.getToken(waitpoint.tokenId)
    if (token && token.status !== 'waiting') await resume(host, run.id, stepKey, tokenStep(token.status, token.payload))
  } else {
    let child = await host.store.getRun(waitpoint.runId)
    if (child && !isFinished(child.status) && child.parentRunId !== run.id) {
      // The caller's idempotency key led to a run that another run (or a
      // plain enqueue) started: when it finishes it resumes its own parent
      // only, so this run asks to be told too, then looks again in case it
      // finished in between.
      host.watchChild(child.id, run.id)
      child = await host.store.getRun(waitpoint.runId)
    }
    if (child && isFinished(child.status)) {
      await resume(host, run.id, stepKey, { status: 'completed', output: childRunResult(child) })
    }
  }
}

/**
 * A child reached `completed` or `failed`: resume the parent if it waits for
 * this child. `parentId` defaults to the run that started the child.
 */
export async function resumeParent(host: WaitHost, child: RunRecord, parentId = child.parentRunId): Promise<void> {
  if (parentId === undefined) return
  const parent = await host.store.getRun(parentId)
  const wait = parent?.suspended
  if (!parent || !wait || wait.waitpoint.type !== 'task' || wait.waitpoint.runId !== child.id) return
  await resume(host, parent.id, wait.stepKey, { status: 'completed', output: childRunResult(child) })
}

/** Records a timer, then arms it in-process. */
export async function armTimer(host: WaitHost, timer: TimerRecord): Promise<void> {
  await host.store.saveTimer(timer)
  scheduleTimer(host, timer)
}

function scheduleTimer(host: WaitHost, timer: TimerRecord): void {
  if (host.closed) return
  host.timers.set(timer.id, Date.parse(timer.dueAt), () => {
    fireTimer(host, timer.id).catch((error) =>
      host.logger.error(`[svc] task runtime: timer ${timer.id} of run ${timer.runId} failed: ${errorMessage(error)}`),
    )
  })
}

async function fireTimer(host: WaitHost, id: string): Promise<void> {
  if (host.closed) return
  // Taking the timer is the claim: whoever removes it acts on it.
  const timer = await host.store.takeTimer(id)
  if (!timer) return
  switch (timer.kind) {
    case 'delay': {
      const now = new Date().toISOString()
      const run = await host.store.updateRun(timer.runId, { status: 'running', startedAt: now }, { status: 'scheduled' })
      if (run) host.dispatch(run)
      return
    }
    case 'retry': {
      const run = await host.store.getRun(timer.runId)
      if (run?.status === 'running') host.dispatch(run)
      return
    }
    case 'sleep':
      await resume(host, timer.runId, timer.stepKey!, { status: 'completed' })
      return
    case 'token-timeout': {
      const settled = await host.store.settleToken(timer.tokenId!, 'timed_out')
      if (settled?.settled) await resume(host, timer.runId, timer.stepKey!, { status: 'timed_out' })
    }
  }
}

/** Completes a `waitForToken` token and resumes its run. */
export async function completeToken(host: WaitHost, tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
  if (typeof tokenId !== 'string' || tokenId === '') {
    throw new TypeError(`completeToken(tokenId): tokenId must be a non-empty string (got ${typeof tokenId})`)
  }
  // The payload becomes the step's output in the run record.
  const problem = jsonProblem(payload)
  if (problem !== undefined) throw new TypeError(`completeToken("${tokenId}"): the payload cannot be stored as JSON: ${problem}`)
  // A deadline is armed as a timer only while the run is suspended on that
  // token; one that passed while the run waited elsewhere (parallel waits)
  // still wins over a late completion.
  const waiting = await host.store.getToken(tokenId)
  if (waiting?.status === 'waiting' && waiting.timeoutAt !== undefined && Date.parse(waiting.timeoutAt) <= Date.now()) {
    const expired = await host.store.settleToken(tokenId, 'timed_out')
    if (expired?.settled) {
      await dropTokenTimer(host, expired.token)
      await resume(host, expired.token.runId, expired.token.stepKey, { status: 'timed_out' })
      return 'timed_out'
    }
  }
  const result = await host.store.settleToken(tokenId, 'completed', payload)
  if (!result) return 'not_found'
  const { settled, token } = result
  if (!settled) return token.status === 'timed_out' ? 'timed_out' : 'already_completed'
  await dropTokenTimer(host, token)
  await resume(host, token.runId, token.stepKey, tokenStep('completed', payload))
  return 'completed'
}

/** Clears the timeout timer of a token that has just been settled. */
async function dropTokenTimer(host: WaitHost, token: TokenRecord): Promise<void> {
  const timeout = timerId(token.runId, 'token-timeout', token.stepKey)
  host.timers.clear(timeout)
  await host.store.takeTimer(timeout)
}

/**
 * Picks up what the store holds after a restart (durable stores): re-arms
 * pending timers, re-arms the delay of scheduled runs that lost theirs,
 * re-dispatches running runs that have no retry pending (at-least-once: an
 * attempt that was in flight runs again), and re-arms the waitpoints of
 * suspended runs, resuming those already met.
 */
export async function recoverRuns(host: WaitHost): Promise<void> {
  const retrying = new Set<string>()
  const delayed = new Set<string>()
  for (const timer of await host.store.listTimers()) {
    if (timer.kind === 'retry') retrying.add(timer.runId)
    if (timer.kind === 'delay') delayed.add(timer.runId)
    scheduleTimer(host, timer)
  }
  // A process that took a delay timer and died before the run went
  // `running` leaves a scheduled run with no timer; nothing else starts it.
  for (const run of await host.store.listRuns({ status: 'scheduled' })) {
    if (delayed.has(run.id)) continue
    await armTimer(host, { id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt ?? run.createdAt })
  }
  for (const run of await host.store.listRuns({ status: 'running' })) {
    if (!retrying.has(run.id)) host.dispatch(run)
  }
  for (const run of await host.store.listRuns({ status: 'suspended' })) await armWaitpoint(host, run)
}

function tokenStep(status: Exclude<TokenStatus, 'waiting'>, payload: unknown): StepRecord {
  if (status === 'timed_out') return { status: 'timed_out' }
  return payload === undefined ? { status: 'completed' } : { status: 'completed', output: payload }
}
