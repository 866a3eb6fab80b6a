/**
 * Task runs: the record a store keeps and `GET /__tasks/<id>` returns, its
 * attempts, recorded steps and waitpoints, and what starting, cancelling and
 * resuming a run answers.
 */
import type { ValidationIssue } from './schema.ts'

/**
 * Run states. `scheduled` is a delayed run that has not started yet.
 * `queued` waits for a slot of its task's `concurrency` or `rateLimit`.
 * `completed`, `failed`, `cancelled` and `compensation_failed` are
 * finished: a finished run never changes status again. `cancelled` comes
 * from `cancel()` (`cancelRun`, `POST /__tasks/runs/<id>/cancel`);
 * `compensation_failed` is a failed run one of whose compensations kept
 * failing (`RunRecord.compensation`).
 */
export type RunStatus = 'scheduled' | 'queued' | 'running' | 'suspended' | 'completed' | 'failed' | 'cancelled' | 'compensation_failed'

/** How a run started. `replay`: `replay()` started it with the input of run `replayOf`. */
export type RunTrigger = 'manual' | 'cron' | 'enqueue' | 'child' | 'replay' | 'event'

export interface Attempt {
  /** 1-based. */
  index: number
  startedAt: string
  durationMs: number
  /** Present when the attempt failed. Message only, never a stack trace. */
  error?: string
  /** When it failed with the error a `ctx.step.run` function threw: that step's key, which `replay(id, { fromStep })` takes. */
  step?: string
  /** When svc failed it for a reason of its own, that reason's code: `DEADLINE_EXCEEDED` for a run past its deadline. */
  code?: 'DEADLINE_EXCEEDED'
}

/** The kind of call that recorded a step. `sleep` and `sleepUntil` are one kind: both wait for an instant and replay the same way. */
export type StepKind =
  | 'run'
  | 'transaction'
  | 'enqueue'
  | 'waitForTask'
  | 'sleep'
  | 'waitForToken'
  | 'waitForEvent'
  | 'waitForSignal'
  | 'patch'
  | 'compensation'

export interface StepRecord {
  status: 'completed' | 'timed_out'
  output?: unknown
  /**
   * The call that recorded the step; a replay that reaches the key through
   * another kind fails with `StepMismatchError`. Absent in records written
   * before kinds were kept: such a step matches any call.
   */
  kind?: StepKind
  /**
   * When the step began (ISO): for `run`, when its function started; for
   * `enqueue`, when the child was asked for; for a wait, when the call
   * first reached it (the run's suspension, when it suspended). Absent in
   * records written before timings were kept.
   */
  startedAt?: string
  /** How long the step took, in milliseconds: its function's run, or how long the wait lasted. Present with `startedAt`. */
  durationMs?: number
  /** A `run` step given a `compensate` function: should the run fail for good, the function undoes it (`RunRecord.compensation`). */
  compensable?: true
}

/**
 * What a suspended run waits for (`RunEnvelope.suspended.waitpoint`):
 * - `sleep`: `step.sleep`/`step.sleepUntil`; resumes at `until`.
 * - `task`: `step.waitForTask`; resumes when child run `runId` of `task`
 *   completes or fails.
 * - `token`: `step.waitForToken`; resumes when token `tokenId` is completed
 *   (`completeToken`, `POST /__tasks/tokens/<tokenId>`) or at `timeoutAt`.
 *   Token ids are `<runId>:<stepKey>` (see `tokenIdFor`).
 * - `event`: `step.waitForEvent`; resumes when an event that meets it is sent, or at `timeoutAt`.
 * - `signal`: `step.waitForSignal`; resumes when a signal named `signal` is sent to the run, or at `timeoutAt`.
 */
export type Waitpoint =
  | { type: 'sleep' /** ISO timestamp */; until: string }
  | { type: 'task'; task: string; runId: string }
  | {
      type: 'token'
      tokenId: string
      /** ISO timestamp. */
      timeoutAt?: string
      /** The wait of a callback URL (`ctx.step.createCallback`), which a request to the URL meets. */
      callback?: true
    }
  | {
      type: 'event'
      /** The event's name. */
      name: string
      /** Data paths and the values the event must hold there. */
      match?: Record<string, unknown>
      /** Events sent at this time (ISO) or later satisfy the wait: its start, less its lookback. */
      since: string
      /** The wait's token, which the event that meets it settles (once). */
      tokenId: string
      /** ISO timestamp. */
      timeoutAt?: string
    }
  | {
      type: 'signal'
      /** The signal's name (not `name`: that field is an awaited event's, which the SQL stores index). */
      signal: string
      /** The wait's token, which the signal that meets it settles (once). */
      tokenId: string
      /** ISO timestamp. */
      timeoutAt?: string
    }

/** The run envelope (docs/tasks.md "The run envelope and statuses"). */
export interface RunEnvelope {
  ok: boolean
  taskName: string
  attempts: Attempt[]
  /** Present when the run completed. */
  result?: unknown
  /**
   * Present while a step has suspended the run; `since` is when it
   * suspended (ISO; absent in records written before it was kept).
   */
  suspended?: { stepKey: string; waitpoint: Waitpoint; since?: string }
  steps: Record<string, StepRecord>
}

/** A run as the store keeps it and `GET /__tasks/<id>` returns it. */
export interface RunRecord extends RunEnvelope {
  id: string
  status: RunStatus
  trigger: RunTrigger
  input: unknown
  /** ISO timestamps. */
  createdAt: string
  startedAt?: string
  finishedAt?: string
  /** Delayed runs: when the run is due. */
  runAt?: string
  idempotencyKey?: string
  /** Set when not 0: its place among the task's queued runs (`EnqueueOptions.priority`). */
  priority?: number
  parentRunId?: string
  /**
   * When the run must be over (ISO 8601): the earlier of its trigger's
   * `deadline` and its task's `route.maxDuration` from when it became due,
   * and, for a child of `ctx.step.waitForTask`, its parent's.
   */
  deadline?: string
  /** The tags it was started with (`EnqueueOptions.tags`); a replay keeps them. */
  tags?: string[]
  /**
   * Small JSON the run keeps up to date while it runs (`ctx.metadata.set`),
   * at most 4 KB: progress, a stage, an external id. Searchable by its
   * top-level keys (`RunQuery.metadata`).
   */
  metadata?: Record<string, unknown>
  /** A run a runtime schedule started: the schedule's id and the tick (ISO 8601) the run stands for. */
  schedule?: { id: string; tick: string }
  /**
   * Present once the run failed for good with steps to undo: the
   * compensations of its completed `ctx.step.run` steps run in reverse
   * order, each recorded as a step `compensate:<key>` of kind
   * `compensation` (docs/tasks.md "Compensation").
   */
  compensation?: RunCompensation
  /** A run woken from a wait to answer updates: the wait's step, and a sleep's end, which the replay sleeps to again (docs/tasks.md "Updates"). */
  wokenForUpdates?: { stepKey: string; until?: string }
  /** Runs started by `replay()`: the run whose task and input this one repeats. */
  replayOf?: string
  /** Runs started by an event (`trigger: 'event'`): which one. */
  event?: { id: string; name: string }
  /** The last data chunks the run sent with `ctx.stream`, once it sent one. */
  chunks?: RunChunkLog
  /** The last entries the run logged with `ctx.log`, once it logged one. */
  logs?: RunLogs
  /** With OpenTelemetry tracing: the trace context its attempts continue (docs/observability.md). */
  trace?: RunTrace
  /**
   * When the attempt that suspended the run began (ISO), kept while it
   * waits: the attempt's record, once it ends, spans its waits too.
   */
  attemptStarted?: { attempt: number; at: string }
  /**
   * The version of its task's code the run started on (docs/deploying.md "Runs across deploys"):
   * `SVC_VERSION` when set, else the digest of the task's module that
   * `svc build` and `svc dev` compute. A run is resumed only by a process
   * of that version while one is live; `migrations` records each move to
   * another.
   */
  version?: string
  /** Each time the run moved to another version because no live process served its own (`versionPolicy: 'migrate'`). */
  migrations?: RunMigration[]
}

/** The undoing of a run's completed steps (`RunRecord.compensation`, docs/tasks.md "Compensation"). */
export interface RunCompensation {
  /** Why: its attempts failed for good (retries spent, or its deadline passed), or `cancel(id, { compensate: true })`. */
  reason: 'failed' | 'cancelled'
  /** `running` until every compensation ran (`completed`), or one kept failing (`failed`: the run ends `compensation_failed`). */
  status: 'running' | 'completed' | 'failed'
  /** The error the run failed with (for a cancel, that it was cancelled). */
  error: string
  /** How many attempts of the compensations have failed. */
  failures: number
  /** Once one kept failing: the step whose compensation it was, and its last error. */
  failed?: { step: string; error: string }
}

/** A run's move from one version of its task to another (`RunRecord.migrations`). */
export interface RunMigration {
  from: string
  to: string
  /** When (ISO). */
  at: string
}

/**
 * The W3C trace context a run keeps (`RunRecord.trace`): the span its
 * attempts are children of, so that every attempt of the run, whichever
 * process runs it and however long after, is part of one trace.
 */
export interface RunTrace {
  traceparent: string
  tracestate?: string
}

/** The level of a run's log entry. */
export type RunLogLevel = 'info' | 'warn' | 'error'

/**
 * One entry a run logged with `ctx.log.info|warn|error(message, attributes?)`,
 * as `GET /__tasks/runs/<id>/logs` and the run's record hand it over.
 */
export interface RunLogEntry {
  /** Its place among the run's entries, from 1, with no gap: a first kept entry above 1 means earlier ones were dropped. */
  seq: number
  level: RunLogLevel
  message: string
  /** JSON attributes given with the message. */
  attributes?: Record<string, unknown>
  /** When it was logged (ISO). */
  at: string
  /** The attempt that logged it. */
  attempt: number
  /** The key of the `ctx.step.run` whose function logged it, when one (and only one) was running. */
  step?: string
}

/**
 * The entries a run keeps (`RunRecord.logs`): the last ones logged, bounded
 * by `MAX_RUN_LOGS` entries and `MAX_RUN_LOG_BYTES` (run-logs.ts); the
 * oldest go first, and `dropped` counts them.
 */
export interface RunLogs {
  /** Oldest first. */
  kept: RunLogEntry[]
  /** Bytes of UTF-8 JSON of `kept`. */
  bytes: number
  /** How many `ctx.log` calls made outside a running `ctx.step.run` the run recorded: a replay skips as many. */
  calls: number
  /** How many entries were dropped to keep the bounds. */
  dropped: number
}

/**
 * One data chunk a run sent with `ctx.stream(name, data)`, as its stream
 * (`GET /__tasks/runs/<id>/stream`, an `event: chunk`) and `subscribeRun`'s
 * `onChunk` hand it over.
 */
export interface RunChunk {
  /** Its place among the run's chunks, from 1, with no gap: a first kept chunk above 1 means earlier ones were dropped. */
  seq: number
  name: string
  data: unknown
  /** When it was sent (ISO). */
  at: string
}

/**
 * The chunks a run keeps (`RunRecord.chunks`): the last ones sent, so that a
 * subscriber that comes late catches up. Bounded by `MAX_RUN_CHUNKS` and
 * `MAX_RUN_CHUNK_BYTES` (run-chunks.ts): the oldest go first.
 */
export interface RunChunkLog {
  /** Oldest first. */
  kept: RunChunk[]
  /** Bytes of UTF-8 JSON of the data of `kept`. */
  bytes: number
  /** How many `ctx.stream` calls made outside a running `ctx.step.run` the run recorded: a replay skips as many. */
  calls: number
}

export interface EnqueueOptions {
  /** Delay before the task runs. Durable only with a durable store. */
  delaySeconds?: number
  /** Enqueues with a key already seen return the existing run. */
  idempotencyKey?: string
  /**
   * A whole number from -1000 to 1000: among the runs queued behind the
   * task's `concurrency` or `rateLimit`, higher priorities start first.
   * @default the task's `route.priority`, else 0
   */
  priority?: number
  /**
   * When the whole run must be over, sleeps, waits and retries included: a
   * `Date`, an ISO 8601 string or epoch milliseconds. Past it the run fails
   * with `DEADLINE_EXCEEDED`, its running attempt is aborted through
   * `ctx.signal`, and no retry follows. The task's `route.maxDuration`
   * sets one too; the earlier of the two applies.
   * @default none, or the task's `route.maxDuration`
   */
  deadline?: Date | string | number
  /**
   * Labels the run is found by: `listRuns({ tags })`, `GET /__tasks/runs?tag=…`,
   * the dashboard's filter and the bulk actions (docs/run-control.md "Tags,
   * metadata and search"). At most 10, each 1 to 64 printable ASCII
   * characters with no space or comma, such as `tenant:acme`.
   * @default none
   */
  tags?: readonly string[]
}

/** Options of `TaskRuntime.trigger`. */
export interface TriggerOptions extends EnqueueOptions {
  /** @default 'manual' */
  trigger?: RunTrigger
  /** Parent run, for child runs started by `step.waitForTask`/`step.enqueue`. */
  parentRunId?: string
  /** The trace context the run's trace continues; by default, the active span's (with OpenTelemetry). */
  trace?: RunTrace
}

/**
 * One item of a batch trigger's answer (`triggerMany`, `enqueueMany`,
 * `POST /__tasks/<name>/batch`), at the index of its payload: the run it
 * started (or the run that already held its idempotency key), or why none
 * started (`VALIDATION_FAILED` with the issues, `STORE_FULL`,
 * `PAYLOAD_TOO_LARGE`, ...).
 */
export type BatchItem =
  | { ok: true; id: string; status: RunStatus }
  | { ok: false; error: string; code: string; details?: ValidationIssue[] }

/** What `enqueue()` returns. Extra fields are preserved. */
export interface EnqueueResult {
  runId: string
  status: RunStatus
  [field: string]: unknown
}

/** What `cancelRun()` resolves to: the body of `POST /__tasks/runs/<id>/cancel`. */
export interface CancelRunResult {
  id: string
  /** `running`, with its `compensation`, for a cancel with `compensate` of a run with steps to undo: it ends `cancelled` once they ran. */
  status: 'cancelled' | 'running'
  compensation?: RunCompensation
  /** The child runs cancelled with it (the ones it waited on, and theirs), nearest first. */
  cancelledWith: string[]
}

/** One change of a run, as `onRunChange` listeners and `GET /__tasks/events` see it. */
export interface RunChange {
  id: string
  taskName: string
  status: RunStatus
}

/**
 * One run's progress, as `GET /__tasks/runs/<id>/stream` sends it and
 * `subscribeRun` (from `svcjs/client`) hands it over: what a page shows of a
 * run, without its input or step outputs.
 */
export interface RunProgress {
  id: string
  taskName: string
  status: RunStatus
  /** Each recorded step by key: how it ended, and the call that recorded it. */
  steps: Record<string, { status: StepRecord['status']; kind?: StepKind }>
  /** How many attempts have ended (a running attempt is not counted yet). */
  attempts: number
  /** ISO timestamps, those the run has. */
  createdAt: string
  startedAt?: string
  finishedAt?: string
  /** Delayed runs: when the run is due. */
  runAt?: string
  /** Present once the run completed: its result. */
  result?: unknown
  /** Present once the run failed: the message of its last attempt's error. */
  error?: string
}

/**
 * Result of completing a `waitForToken` token. `run_cancelled`: the run that
 * waited on it was cancelled, so nothing changed.
 */
export type CompleteTokenResult = 'completed' | 'not_found' | 'already_completed' | 'timed_out' | 'run_cancelled'
