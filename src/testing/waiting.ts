/**
 * What a run waits on, read from its record and timers, for `t.waitingOn`
 * and for the errors of a run that cannot finish without the test.
 */
import type { RunRecord } from '../types.ts'
import type { TimerRecord } from '../runtime/types/timers.ts'
import { unknownWaitpoint } from '../runtime/tasks/steps/waitpoint-kinds.ts'

export type Waiting =
  /** `ctx.step.sleep` or `sleepUntil`, until `until`. */
  | { kind: 'sleep'; step: string; until: Date }
  /** `ctx.step.waitForToken`, or a callback's wait (`callback`): complete it with `t.completeToken(tokenId, payload)`. */
  | { kind: 'token'; step: string; tokenId: string; timeoutAt?: Date; callback?: true }
  /** `ctx.step.waitForEvent`: send it with `t.sendEvent(name, data)`. */
  | { kind: 'event'; step: string; name: string; match?: Record<string, unknown>; timeoutAt?: Date }
  /** `ctx.step.waitForSignal` (or `ctx.signals`): send it with `t.sendSignal(runId, name, data)`. */
  | { kind: 'signal'; step: string; name: string; timeoutAt?: Date }
  /** `ctx.step.waitForTask`: the child run `runId` of `task`. */
  | { kind: 'run'; step: string; runId: string; task: string }
  /** A delayed or debounced run, due to start at `at`. */
  | { kind: 'start'; at: Date }
  /** A failed attempt's retry, due at `at`. */
  | { kind: 'retry'; at: Date }
  /** Queued behind the task's concurrency or rate limit. */
  | { kind: 'queue' }

/** What `run` waits on, given the store's timers; `undefined` when it runs or has finished. */
export function waitingOf(run: RunRecord, timers: readonly TimerRecord[]): Waiting | undefined {
  if (run.status === 'scheduled') return run.runAt === undefined ? undefined : { kind: 'start', at: new Date(run.runAt) }
  if (run.status === 'queued') return { kind: 'queue' }
  if (run.status === 'running') {
    const retry = timers.find((timer) => timer.runId === run.id && timer.kind === 'retry')
    return retry ? { kind: 'retry', at: new Date(retry.dueAt) } : undefined
  }
  if (run.status !== 'suspended' || !run.suspended) return undefined
  const { stepKey: step, waitpoint } = run.suspended
  const timeoutAt = 'timeoutAt' in waitpoint && waitpoint.timeoutAt !== undefined ? { timeoutAt: new Date(waitpoint.timeoutAt) } : {}
  switch (waitpoint.type) {
    case 'sleep':
      return { kind: 'sleep', step, until: new Date(waitpoint.until) }
    case 'token':
      return { kind: 'token', step, tokenId: waitpoint.tokenId, ...timeoutAt, ...(waitpoint.callback ? { callback: true as const } : {}) }
    case 'event':
      return { kind: 'event', step, name: waitpoint.name, ...(waitpoint.match ? { match: waitpoint.match } : {}), ...timeoutAt }
    case 'signal':
      return { kind: 'signal', step, name: waitpoint.signal, ...timeoutAt }
    case 'task':
      return { kind: 'run', step, runId: waitpoint.runId, task: waitpoint.task }
    default:
      return unknownWaitpoint(waitpoint)
  }
}

/** What a run waits on, in a sentence of an error message. */
export function describeWaiting(waiting: Waiting): string {
  switch (waiting.kind) {
    case 'token':
      return `step "${waiting.step}" waits on ${waiting.callback ? 'a request to its callback URL, token' : 'token'} ${waiting.tokenId}; complete it with t.completeToken(${JSON.stringify(waiting.tokenId)}, payload)`
    case 'event':
      return `step "${waiting.step}" waits on an event "${waiting.name}"${waiting.match ? ` matching ${JSON.stringify(waiting.match)}` : ''}; send it with t.sendEvent(${JSON.stringify(waiting.name)}, data)`
    case 'signal':
      return `step "${waiting.step}" waits on a signal "${waiting.name}"; send it with t.sendSignal(runId, ${JSON.stringify(waiting.name)}, data)`
    case 'run':
      return `step "${waiting.step}" waits on run ${waiting.runId} of "${waiting.task}", which cannot finish either`
    default:
      return `it waits on ${waiting.kind}`
  }
}
