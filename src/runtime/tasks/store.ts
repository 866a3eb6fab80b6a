/**
 * The run store: where runs, attempts, steps, waitpoints, timers, tokens and
 * idempotency keys live. The runner only talks to this interface, so a
 * durable implementation (SQLite, a platform broker) replaces the memory one
 * without touching it.
 *
 * Every record is plain, JSON-serializable data, with two caveats that are
 * the application's responsibility: a run's `input` and `result`, and step
 * outputs, are whatever the task received and returned.
 *
 * Methods that change state under a condition (`createRun` with an
 * idempotency key, `updateRun` with `expect`, `takeTimer`, `settleToken`,
 * `putToken`) are the
 * compare-and-set points: a durable store implements each atomically, so two
 * processes that race for the same transition cannot both win.
 */
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'

/**
 * Fields of a run that `updateRun` may change. A key that is present with the
 * value `undefined` removes the field (for example `suspended: undefined`
 * when a run resumes).
 */
export type RunPatch = Partial<
  Pick<RunRecord, 'status' | 'ok' | 'result' | 'suspended' | 'startedAt' | 'finishedAt' | 'runAt'>
>

export interface RunQuery {
  /** Only runs of this task. */
  taskName?: string
  /** Only runs in this status (or one of these). */
  status?: RunStatus | readonly RunStatus[]
  /** At most this many runs, newest first. @default unlimited */
  limit?: number
}

/** What a pending timer does when it fires. */
export type TimerKind =
  /** A delayed run (`delaySeconds`) becomes due: `scheduled` → `running`. */
  | 'delay'
  /** Backoff elapsed: the next attempt of a `running` run starts. */
  | 'retry'
  /** A `step.sleep`/`step.sleepUntil` waitpoint is reached. */
  | 'sleep'
  /** A `step.waitForToken` timeout: the token times out. */
  | 'token-timeout'

/** A pending in-process (or broker) timer. */
export interface TimerRecord {
  id: string
  runId: string
  kind: TimerKind
  /** ISO timestamp. */
  dueAt: string
  /** `sleep` and `token-timeout`: the step that waits. */
  stepKey?: string
  /** `token-timeout`: the token that times out. */
  tokenId?: string
}

export type TokenStatus = 'waiting' | 'completed' | 'timed_out'

/** A token created by `step.waitForToken`. */
export interface TokenRecord {
  id: string
  runId: string
  stepKey: string
  status: TokenStatus
  /** ISO timestamps. */
  createdAt: string
  timeoutAt?: string
  settledAt?: string
  /** The payload it was completed with. */
  payload?: unknown
}

export interface RunStore {
  /**
   * Whether records survive a restart of the process. With a durable store,
   * waits are still timed in-process, but `recover()` re-arms them after a
   * restart, so the note about in-process waits is not logged.
   * @default false
   */
  readonly durable?: boolean

  /**
   * Inserts a new run and resolves to a copy of it. When the run carries an
   * `idempotencyKey` that a retained run of the same task already holds,
   * nothing is inserted and it resolves to that run instead (compare the
   * ids). Keys are scoped to their task and live as long as their run is
   * retained. Inserting an existing id is an error.
   *
   * A store is bounded: it evicts finished runs, never live ones (any
   * status but completed and failed). When as many runs as its bound are
   * live, inserting another live run rejects with `StoreFullError` and
   * changes nothing; a held idempotency key still resolves to its run.
   */
  createRun(run: RunRecord): Promise<RunRecord>

  /** A copy of the run; changing it does not change the store. */
  getRun(id: string): Promise<RunRecord | undefined>

  /**
   * Applies `patch` and resolves to a copy of the updated run. With `expect`,
   * the update happens only when the run's current status is the expected
   * one (or one of them); otherwise nothing changes and it resolves to
   * `undefined`. Unknown ids resolve to `undefined`.
   */
  updateRun(
    id: string,
    patch: RunPatch,
    expect?: { status: RunStatus | readonly RunStatus[] },
  ): Promise<RunRecord | undefined>

  /** Appends one element to the run's `attempts`. */
  appendAttempt(runId: string, attempt: Attempt): Promise<void>

  /** Records (or overwrites) one entry of the run's `steps`. */
  saveStep(runId: string, key: string, step: StepRecord): Promise<void>

  /** Runs, newest first. */
  listRuns(query?: RunQuery): Promise<RunRecord[]>

  /** Records a pending timer, replacing one with the same id. */
  saveTimer(timer: TimerRecord): Promise<void>

  /**
   * Removes a timer and resolves to it, or to `undefined` when it is gone
   * (already fired or cancelled). Whoever takes it acts on it.
   */
  takeTimer(id: string): Promise<TimerRecord | undefined>

  /** Every pending timer, to re-arm them after a restart. */
  listTimers(): Promise<TimerRecord[]>

  /**
   * Inserts a token unless one with the same id exists, and resolves to the
   * stored token either way (a replay must not reset a waiting token).
   */
  putToken(token: TokenRecord): Promise<TokenRecord>

  getToken(id: string): Promise<TokenRecord | undefined>

  /**
   * Moves a `waiting` token to `completed` (with `payload`) or `timed_out`.
   * Resolves to `undefined` for an unknown id; otherwise to the token after
   * the call and whether this call settled it (`false` when it was already
   * completed or timed out, in which case nothing changed).
   */
  settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined>
}

/** Statuses in which a run is over. */
export function isFinished(status: RunStatus): boolean {
  return status === 'completed' || status === 'failed'
}

/** Whether `status` is the expected status, or one of them (the `expect` of `updateRun`). */
export function statusMatches(status: RunStatus, expected: RunStatus | readonly RunStatus[]): boolean {
  return typeof expected === 'string' ? status === expected : expected.includes(status)
}

/** Applies a `RunPatch` in place: a key present with `undefined` removes the field. */
export function applyRunPatch(run: RunRecord, patch: RunPatch): void {
  const target = run as unknown as Record<string, unknown>
  for (const key in patch) {
    const value = (patch as Record<string, unknown>)[key]
    if (value === undefined) delete target[key]
    else target[key] = value
  }
}
