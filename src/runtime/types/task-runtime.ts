/** `TaskRuntime`, and the summary it gives of each task. */
import type { UpdateRecord, UpdateRunOptions } from './updates.ts'
import type { TaskDefinition } from './task-definition.ts'
import type { RunQuery, RunStore } from './run-store.ts'
import type { BatchItem, CompleteTokenResult, RunChange, RunRecord, RunStatus, TriggerOptions } from './runs.ts'
import type { TaskInput, TaskNameArg, TaskPayloadArgs } from './task-registry.ts'
import type { EventInput, EventPage, ListEventsQuery, SendEventOptions, SentEvent } from './events.ts'
import type { SchedulesApi } from './schedules.ts'
import type { SendSignalOptions, SentSignal, SignalRecord } from './signals.ts'

/**
 * The task runtime: registers the task routes of an app and runs them.
 * `createTaskRuntime()` returns one. Edge-safe; the Node server, the edge
 * and function targets and the CLI all drive the same implementation.
 */
export interface TaskRuntime {
  /** Registered tasks by dot-form name. */
  readonly tasks: ReadonlyMap<string, TaskDefinition>
  /** Where runs, steps, timers and tokens are kept (the `store` option, or the default memory store). */
  readonly store: RunStore
  /**
   * The largest input, result, step output and token payload a run may
   * hold, in bytes of UTF-8 JSON (the `maxPayloadBytes` option). Absent on
   * a runtime whose engine runs elsewhere (the worker side of the tasks
   * Durable Object).
   */
  readonly maxPayloadBytes?: number
  /**
   * Validates the payload and starts a run. Resolves as soon as the run is
   * recorded, not when it finishes. Rejects with `ValidationError`,
   * `TaskNotFoundError`, `PayloadTooLargeError` for an input over
   * `maxPayloadBytes`, or `StoreFullError` while the run store is full of
   * live runs. Cron runs skip validation.
   */
  trigger<N extends string>(name: TaskNameArg<N>, ...args: TaskPayloadArgs<N, TriggerOptions>): Promise<RunRecord>
  /**
   * Starts one run of `name` per payload (at most `MAX_BATCH_ITEMS`,
   * 10,000), recorded together: one write on every store. Each payload is
   * validated on its own, and resolves to one `BatchItem` per payload, in
   * order: the run it started, or why none did. `opts` applies to every
   * run; an `idempotencyKey` gives each item a key of svc's own made from
   * it and the item's index (`batchItemKey`), so the same batch sent again
   * starts nothing more. Throws for a bad task name,
   * a batch too large or bad options (docs/tasks.md "Starting many runs").
   */
  triggerMany<N extends string>(name: TaskNameArg<N>, payloads: readonly TaskInput<N>[], opts?: TriggerOptions): Promise<BatchItem[]>
  /** The run record, or `undefined` for a run the store does not hold. */
  getRun(id: string): Promise<RunRecord | undefined>
  /**
   * Runs, newest first. `query.cursor`, the id of the last run of the
   * previous page, lists the page after it.
   */
  listRuns(query?: RunQuery): Promise<RunRecord[]>
  /**
   * Resolves when the run is `completed`, `failed` or `cancelled`. Rejects for an unknown
   * run, and after `close()` for a run that has not finished.
   */
  waitForRun(id: string): Promise<RunRecord>
  /** Completes a `waitForToken` token and resumes its run. */
  completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult>
  /**
   * Sends a signal named `name` with `data` to live run `runId`: the run's
   * `ctx.step.waitForSignal` (or `ctx.signals`) for that name takes it,
   * now if it waits, or when it next waits; signals of a name are taken
   * in the order they were sent, each once. Sending an `id` again keeps
   * nothing more (`duplicate: true`). Rejects with `RunNotFoundError`,
   * `RunFinishedError` (409), `TooManySignalsError` (429: the run holds
   * `MAX_WAITING_SIGNALS` signals no wait took) or `PayloadTooLargeError`;
   * throws a `TypeError` for a bad name or id (docs/tasks.md "Signals").
   */
  sendSignal(runId: string, name: string, data?: unknown, options?: SendSignalOptions): Promise<SentSignal>
  /** The signals run `runId` holds, oldest first: each with the wait that took it (`takenBy`, its token), if one did. */
  listSignals(runId: string): Promise<SignalRecord[]>
  /**
   * Sends update `name` with `data` to live run `runId` and waits for the
   * run's answer: what its `ctx.onUpdate(name)` handler returned. Rejects
   * with `ValidationError` (400: the data failed the handler's schema),
   * `UpdateFailedError` (422: the handler threw), `UpdateNotHandledError`
   * (404: the run declares no handler of the name), `RunNotFoundError`,
   * `RunFinishedError` (409), `TooManyUpdatesError` (429),
   * `PayloadTooLargeError`, or `UpdateTimeoutError` when no answer came in
   * `timeoutSeconds` (the update stays: ask again with its `id`). Throws a
   * `TypeError` for a bad name or id (docs/tasks.md "Updates").
   */
  updateRun<Result = unknown>(runId: string, name: string, data?: unknown, options?: UpdateRunOptions): Promise<Result>
  /** The updates run `runId` holds, oldest first, each with its answer once it has one. */
  listUpdates(runId: string): Promise<UpdateRecord[]>
  /**
   * Sends an event: starts one run of every task whose `on` names it, with
   * `data` as its input, and resolves to the event's id and those runs.
   * Sending an `id` again starts nothing more and answers with the runs the
   * first send started. Data that does not fit a task's `input` records a
   * failed run of that task naming the event; the other tasks still start.
   * Throws a `TypeError` for a bad name or id, and rejects with
   * `PayloadTooLargeError` for data over `maxPayloadBytes`
   * (docs/events.md).
   */
  sendEvent(name: string, data?: unknown, options?: SendEventOptions): Promise<SentEvent>
  /** Sends up to 100 events, each as `sendEvent` does; every event is checked before any is sent. */
  sendEvents(events: readonly EventInput[]): Promise<SentEvent[]>
  /**
   * The events the store holds, newest first, a page at a time: each with
   * the runs it started (their task and status now) and the runs whose
   * `ctx.step.waitForEvent` it met. Pass a page's `cursor` back to list
   * the page after. Rejects with a `TypeError` or `RangeError` for a bad
   * query, and with `SvcError` `NOT_IMPLEMENTED` (501) when the store keeps
   * no list of events (docs/events.md).
   */
  listEvents(query?: ListEventsQuery): Promise<EventPage>
  /**
   * Cancels a live run (scheduled, queued, running or suspended) and resolves to it,
   * now `cancelled`: aborts the signal of its attempt in flight, removes its
   * timers, makes its tokens answer `run_cancelled`, resolves `waitForRun`
   * callers with it and resumes a parent waiting on it (with a
   * `ChildRunResult` marked `cancelled`). Its recorded steps stay.
   * Rejects with `RunNotFoundError` (404 `RUN_NOT_FOUND`) for a run the
   * store does not hold and `RunFinishedError` (409 `RUN_FINISHED`) for a
   * run that already finished.
   *
   * The child runs it waits on (`ctx.step.waitForTask`) are cancelled with
   * it, and theirs, down the chain (`options.children`, default `'waited'`;
   * `'none'` leaves them running). The resolved run lists their ids in
   * `cancelledWith`. A child that finished meanwhile, or that another
   * shard holds out of reach, is left as it is.
   */
  cancel(id: string, options?: CancelOptions): Promise<CancelledRun>
  /**
   * Starts a new run of the run's task with its input (validated again
   * against the task's current schema; a scheduled run's input stays
   * `{ _cron: true }`), with `trigger: 'replay'` and `replayOf: id`.
   * Rejects with `RunNotFoundError`, `TaskNotFoundError` when the task is no
   * longer registered, `ValidationError` or `StoreFullError`.
   *
   * With `fromStep`, the new run starts with the steps the run recorded
   * before that one, copied as recorded: they return their outputs and do
   * not run again, and everything from `fromStep` on runs anew on the
   * current code. A key the run did not record rejects with
   * `StepNotRecordedError` (400 `STEP_NOT_RECORDED`), naming the keys it
   * did. `input` replaces the run's input (validated as a trigger's is).
   */
  replay(id: string, options?: ReplayOptions): Promise<RunRecord>
  /**
   * Ends a run's wait on time now, as if its time had come: a run
   * suspended on `ctx.step.sleep` or `sleepUntil` has its sleep recorded
   * as met now, then replays and goes on; a delayed run (`scheduled`, from
   * `delaySeconds` or a debounce) starts now. It sets the timer that ends
   * the wait due now, so on every store, shared ones too, the run goes on
   * as it would at its time, a moment after this resolves: it resolves to
   * the run as recorded then, which may still be `suspended` or
   * `scheduled`. Rejects with `RunNotFoundError` (404 `RUN_NOT_FOUND`),
   * `RunFinishedError` (409 `RUN_FINISHED`) for a finished run, and
   * `RunNotSleepingError` (409 `RUN_NOT_SLEEPING`) for a run that waits on
   * a token, an event, a child run or a slot, or is running, naming what
   * resumes it instead (docs/run-control.md "Waking a run and firing a
   * schedule now").
   */
  wake(id: string): Promise<RunRecord>
  /**
   * Starts one run of a scheduled task now, as a tick of its schedule
   * does: `trigger: 'cron'`, input `{ _cron: true }`, and skipped while
   * the task's previous scheduled run is live. Rejects with
   * `TaskNotFoundError`, `TaskNotScheduledError` (400 `NOT_SCHEDULED`) for
   * a task without a `schedule`, and `TickSkippedError` (409
   * `TICK_SKIPPED`) naming why the tick started no run (the previous
   * scheduled run is live; on a shared store, this minute's tick already
   * started one).
   */
  fireSchedule(name: string): Promise<RunRecord>
  /**
   * Calls `listener` with `{ id, taskName, status }` each time this
   * runtime's engine changes a run (created, started, suspended, resumed,
   * retried, finished, cancelled), and `onEnd` once when the runtime drains
   * or closes, after which nothing more is reported. Returns the function
   * that stops listening. On a store several processes share
   * (`PostgresRunStore`, `SqliteRunStore` with `shared: true`) the other
   * processes' changes are reported too, a few milliseconds later; the
   * changes of a run that moves between processes may then arrive out of
   * order. Absent on a runtime whose engine lives elsewhere (a worker's
   * view of the Durable Object).
   */
  onRunChange?(listener: (change: RunChange) => void, onEnd?: () => void): () => void
  /** Every task, with its last run, as `GET /__tasks` lists them. */
  listTasks(): Promise<TaskSummary[]>
  /**
   * Schedules made at runtime, beside the static `schedule` of route files
   * (types/schedules.ts, docs/run-control.md "Schedules at runtime"). Absent
   * on a runtime whose engine runs elsewhere (the worker side of the tasks
   * Durable Object).
   */
  readonly schedules?: SchedulesApi
  /**
   * Fires every task whose schedule is exactly `cron` (whitespace aside),
   * for platforms that fire cron themselves. With `timezone`, only the tasks
   * whose schedule is read in that zone (default UTC).
   */
  runScheduled(cron: string, timezone?: string): Promise<RunRecord[]>
  /**
   * Starts one cron job per scheduled task, unless `SVC_DISABLE_IN_PROCESS_CRON`
   * is on in the runtime's `env`. Never called at import.
   */
  startScheduler(): void
  stopScheduler(): void
  /** Scheduled tasks and, while the scheduler runs, their next tick. */
  scheduledJobs(): ScheduledJob[]
  /**
   * Re-arms what a durable store holds after a restart: pending timers,
   * running runs (re-dispatched) and the waitpoints of suspended runs.
   * Nothing to do with the memory store, which starts empty.
   */
  recover(): Promise<void>
  /**
   * Waits for in-flight attempts, including the work they start meanwhile
   * (a retry, a resumed parent), at most `timeoutMs`; logs a warning when
   * some are still in flight then. `timeoutMs` defaults to 30000.
   */
  drain(timeoutMs?: number): Promise<void>
  /**
   * One tick for a host with no process between invocations (a function
   * platform's scheduled call). On a shared store (`PostgresRunStore`), one
   * sweep claims the due timers (delays, retries, ends of sleeps, token
   * timeouts) and the attempts whose lease lapsed, and starts what they
   * stand for; then it waits for the attempts in flight in this runtime,
   * and the work they start, until none is left or the deadline `untilMs`
   * (epoch ms) passes, renewing their leases meanwhile; what is still in
   * flight then goes on in the background. `claim: false` only waits (an
   * invocation holding the run its request started to its end or first
   * wait). On a store that is not shared, every timer is armed in this
   * process already, so it only waits. Absent on a runtime whose engine
   * lives elsewhere.
   */
  sweep?(options: { untilMs: number; claim?: boolean }): Promise<{ inFlight: number }>
  /**
   * Stops the scheduler, clears every pending in-process timer (delays,
   * backoff, sleeps, token timeouts) so nothing keeps the process alive,
   * aborts the signal of in-flight attempts and rejects pending
   * `waitForRun` calls. Call `drain()` first for a graceful shutdown. If
   * this runtime is the active one, it is no longer. Idempotent.
   */
  close(): Promise<void>
}

/** A task as `GET /__tasks` and `svc tasks list` describe it. */
export interface TaskSummary {
  name: string
  path: string
  schedule: string | null
  /** The events that start a run of the task (`route.on`); empty when none. */
  events: string[]
  retries: number
  timeout: number
  /** Flow control from the route config (`route.concurrency`, `rateLimit`, `debounce`); null when unset. */
  /** `perKey` is present for fair shares only. */
  concurrency: { limit: number; key: string | null; perKey?: number } | null
  rateLimit: { limit: number; periodSeconds: number; key: string | null } | null
  debounce: { seconds: number; key: string | null } | null
  /** Runs of the task waiting for a slot. */
  queued: number
  lastRun: { id: string; status: RunStatus; finishedAt: string | null } | null
}

/** A scheduled task as `scheduledJobs()` lists it. */
export interface ScheduledJob {
  task: string
  schedule: string
  timezone: string
  /**
   * ISO timestamp of the next tick, whether this process fires it or an
   * external scheduler does; `null` where the runtime has no cron clock.
   */
  nextRun: string | null
  /**
   * Whether this process fires it: false before `startScheduler()`, after
   * `stopScheduler()`, with `SVC_DISABLE_IN_PROCESS_CRON`, and where the
   * platform fires the schedules.
   */
  inProcess: boolean
}

/** How far `cancel` reaches. */
export interface CancelOptions {
  /**
   * `'waited'`: the child run this run waits on (`ctx.step.waitForTask`),
   * and the one that child waits on, down the chain. `'all'`: those, and
   * the runs its `ctx.step.enqueue` calls started, and theirs, at every
   * level. `'none'`: only this run.
   * @default 'waited'
   */
  children?: 'waited' | 'all' | 'none'
  /**
   * Runs the compensations of the run's completed steps first, last
   * first, as for a run that failed for good; the run ends `cancelled`
   * once they ran (docs/tasks.md "Compensation"). A run with none is
   * cancelled at once.
   * @default false
   */
  compensate?: boolean
}

/** What `cancel` resolves to: the run, now cancelled, and the runs cancelled with it. */
export interface CancelledRun extends RunRecord {
  /** The ids of the child runs cancelled with it, nearest first; empty when none were. */
  cancelledWith: string[]
}

/** How `replay` starts the new run. */
export interface ReplayOptions {
  /** The key of the first step to run anew; the steps recorded before it are kept. @default none: every step runs anew */
  fromStep?: string
  /** The new run's input, in place of the run's. @default the run's input */
  input?: unknown
}
