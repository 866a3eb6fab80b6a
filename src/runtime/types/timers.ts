/** The timers a run store keeps: what wakes a run when a moment comes. */

/** What a pending timer does when it fires. */
export type TimerKind =
  /** A delayed run (`delaySeconds`) becomes due: `scheduled` → `running`. */
  | 'delay'
  /** Backoff elapsed: the next attempt of a `running` run starts. */
  | 'retry'
  /** A `step.sleep`/`step.sleepUntil` waitpoint is reached. */
  | 'sleep'
  /** A rate limit's window frees a place: the queued runs of the run's task are looked at again. */
  | 'queue'
  /** A `step.waitForToken` timeout: the token times out. */
  | 'token-timeout'
  /** A run waits for a child in another shard (`RuntimeShard.peers`): it looks at the child again, should word of its end be lost. */
  | 'child'
  /** A run's `deadline` passed: a run that is not running fails with `DEADLINE_EXCEEDED` (a running one fails in its attempt). */
  | 'deadline'
  /** A runtime schedule's tick (`runId` is the schedule's id): it starts its run, and the timer of the next tick is set. */
  | 'schedule'

/** A pending in-process (or broker) timer. */
export interface TimerRecord {
  id: string
  runId: string
  kind: TimerKind
  /** ISO timestamp. */
  dueAt: string
  /** `sleep`, `token-timeout` and `child`: the step that waits. */
  stepKey?: string
  /** `token-timeout`: the token that times out. */
  tokenId?: string
}
