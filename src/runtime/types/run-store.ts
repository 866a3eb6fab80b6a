/**
 * The run store's interface: where runs, attempts, steps, waitpoints,
 * timers, tokens and idempotency keys live (see `src/runtime/tasks/store/store.ts`
 * for what every store shares, and the contract suites in `test/tasks/`).
 */
import type { StoreFullError } from '../errors.ts'
import type { FlowLimits } from './flow.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from './runs.ts'
import type { SharedWork } from './shared-work.ts'
import type { TimerRecord } from './timers.ts'
import type { ScheduleStore } from './schedules.ts'
import type { SignalStore } from './signals.ts'
import type { UpdateStore } from './updates.ts'

export type { LiveVersions, SharedWork } from './shared-work.ts'
export type { RunQuery } from './run-query.ts'
import type { RunQuery } from './run-query.ts'
export type { TimerKind, TimerRecord } from './timers.ts'
export type { TokenRecord, TokenStatus } from './tokens.ts'
import type { TokenRecord } from './tokens.ts'

/**
 * Fields of a run that `updateRun` may change. A key that is present with the
 * value `undefined` removes the field (for example `suspended: undefined`
 * when a run resumes). `attempt` is appended to the run's `attempts` in the
 * same write, so an attempt that ends the run costs one write, not two.
 */
export type RunPatch = Partial<
  Pick<
    RunRecord,
    | 'status'
    | 'ok'
    | 'result'
    | 'suspended'
    | 'startedAt'
    | 'finishedAt'
    | 'runAt'
    | 'chunks'
    | 'logs'
    | 'attemptStarted'
    | 'version'
    | 'migrations'
    | 'metadata'
    | 'compensation'
    | 'wokenForUpdates'
  >
> & {
  attempt?: Attempt
}

/** One task's count of runs, as `countRunsByTask` resolves to. */
export interface TaskRunCount {
  taskName: string
  count: number
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
   * Present on a store that several processes share (`PostgresRunStore`,
   * `SqliteRunStore` with `shared: true`): how they split due work, leases
   * on running attempts and cron ticks between them. Without it the engine
   * times every wait in-process, as the memory store and a SQLite file
   * opened without `shared` need.
   */
  readonly shared?: SharedWork

  /**
   * Present on a store that processes may share without `shared`
   * (`SqliteRunStore` without `shared: true`): of these running runs, the ones whose process is
   * gone, taken for this one (`claimed`). `recover()` runs again only those,
   * leaving attempts another live process has in flight to it, and asks
   * about the others again after `recheckInMs`, when one of their holders
   * may have gone. Without it, `recover()` runs again every running run.
   */
  claimRunning?(runIds: readonly string[]): Promise<{ claimed: string[]; recheckInMs?: number }>

  /**
   * Set on a store that fences the runs its process holds
   * (`PostgresRunStore`, `SqliteRunStore`): it keeps, for each run whose
   * attempt runs here, the fencing token its claim got, and the writes of
   * that attempt (`saveStep`, `updateRun` expecting `running` only,
   * `appendAttempt`, `createRun` and `debounceRun` of a child with its
   * `parentRunId`, `putToken`, `saveTimer` of a retry, sleep or token
   * timeout) check it atomically with the write. Once another process took
   * the run over (this one stalled) or cancelled it, such a write changes
   * nothing and rejects with `LeaseLostError`, and the engine aborts the
   * attempt, logs it once and records nothing more. Writes outside an
   * attempt are not fenced: a cancel, and the resume of a suspended run by
   * whoever met its waitpoint. A store serves one engine, the one of its
   * process: the runs it holds are that engine's attempts.
   */
  readonly fences?: true

  /**
   * Inserts a new run and resolves to a copy of it. When the run carries an
   * `idempotencyKey` that a retained run of the same task already holds,
   * nothing is inserted and it resolves to that run instead (compare the
   * ids). Keys are scoped to their task and live as long as their run is
   * retained. Inserting an existing id is an error.
   *
   * A store is bounded: it evicts finished runs, never live ones (any
   * status but completed, failed and cancelled). When as many runs as its bound are
   * live, inserting another live run rejects with `StoreFullError` and
   * changes nothing; a held idempotency key still resolves to its run.
   *
   * `leaseOwner` comes only to a store whose `shared.leasesOnCreate` is
   * set: a run it inserts `running` is then leased to that engine at once,
   * under the fence the insert set, as `acquireLease` would lease it, so
   * the dispatch that follows takes no lease of its own.
   */
  createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord>

  /**
   * Optional: inserts many runs in one transaction, each as `createRun`
   * would, and resolves to one answer per run, in order: the run inserted,
   * the run that already held its idempotency key, or a `StoreFullError`
   * for a live run past the bound (the others are inserted). A store
   * without it has each run created on its own (`triggerMany`).
   */
  createRuns?(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]>

  /** A copy of the run; changing it does not change the store. */
  getRun(id: string): Promise<RunRecord | undefined>

  /**
   * Applies `patch` and resolves to a copy of the updated run. With `expect`,
   * the update happens only when the run's current status is the expected
   * one (or one of them); otherwise nothing changes and it resolves to
   * `undefined`. Unknown ids resolve to `undefined`.
   */
  updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined>

  /** Appends one element to the run's `attempts`. */
  appendAttempt(runId: string, attempt: Attempt): Promise<void>

  /** Records (or overwrites) one entry of the run's `steps`. */
  saveStep(runId: string, key: string, step: StepRecord): Promise<void>

  /**
   * Present on a store whose database the app's own tables can share
   * (`ctx.step.transaction`): opens a transaction on it, runs `work` with a
   * handle on it, builds the step's record from what `work` returned
   * (`record`), and writes the record in the same transaction, fenced as
   * `saveStep` is. It resolves to `work`'s output only once that committed.
   * When `work` or `record` throws, or the run is no longer this process's
   * (`LeaseLostError`, checked before `work` runs and held until the
   * commit), nothing of it commits and it rejects.
   */
  transactStep?<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T>

  /** Runs, newest first. */
  listRuns(query?: RunQuery): Promise<RunRecord[]>

  /**
   * Retention (docs/stores.md "Retention"): of the `limit` runs of
   * `taskName` that finished first (completed, failed or cancelled, in the
   * order they finished), deletes those whose `finishedAt` is before
   * `before` (ISO), with their steps and tokens, and resolves to how many
   * went. Live runs are never deleted. The engine calls it in the
   * background, in bounded batches, never on a run's own path; processes
   * sharing a store may call it at once, and each run goes once.
   */
  pruneFinished?(taskName: string, before: string, limit: number): Promise<number>

  /**
   * How many runs each task has in `status` (or one of these), in no
   * particular order; a task with none is left out. A count, not a listing:
   * `GET /__tasks` shows each task's queue length with it, without reading
   * the runs queued behind a limit.
   */
  countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<TaskRunCount[]>

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
   * Optional: removes every timer of run `runId` (a cancelled run's), in one
   * write, and resolves to their ids, so that nothing fires for it again.
   * Without it, the engine reads every timer and takes the run's one by one.
   */
  dropTimersOf?(runId: string): Promise<string[]>

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

  /**
   * Flow control (`route.concurrency`, `route.rateLimit`): moves the queued
   * runs of `taskName` that `planStarts` (flow.ts) lets start at `now` (ISO)
   * to `running`, setting `startedAt` where it is unset, and resolves to
   * them and to when the rate limit frees a place for one it blocked. The
   * read and the writes are one atomic step, so callers racing in any
   * process never start more than the limits allow.
   */
  startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns>

  /**
   * Flow control (`route.debounce`): `run` is a `scheduled` run with
   * `runAt`. When a `scheduled` run of the same task holds the same
   * `flowKey` of its input under `keyPath`, that run takes `run`'s input
   * and `runAt` and resolves (compare the ids); otherwise `run` is created
   * as `createRun` does (an idempotency key held resolves to its run).
   * Atomic, like `createRun`.
   */
  debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord>

  /**
   * Events (docs/events.md): records `event` unless an event with its id
   * is held, and resolves to the event held (the first send's, for an id
   * sent again) and whether this call recorded it. Atomic, like
   * `createRun`: of processes racing with one id, one records it. Events
   * are held for `EVENT_RETENTION_MS` after their `time`; each call may
   * remove a bounded batch of older ones. A store may also bound how many
   * it holds, removing the oldest first.
   */
  putEvent?(event: EventRecord): Promise<{ event: EventRecord; created: boolean }>

  /**
   * The held events named `name` whose `time` is `since` (ISO) or later
   * and whose data holds `match` (`matchesEvent`, events/match.ts; every
   * one without it), oldest first (in the order they were recorded), at
   * most `limit`. Every event of the window is looked at, however many
   * before it do not match, and in bounded memory: a flood of other
   * events of the name hides none.
   */
  eventsSince?(name: string, since: string, limit: number, match?: Readonly<Record<string, unknown>>): Promise<EventRecord[]>

  /**
   * The held events, newest first (in the reverse of the order they were
   * recorded), only those named `query.name` when it is set, at most
   * `query.limit` (a whole number from 1). `cursor` is set when more
   * follow: passed back as `query.cursor`, it lists the page after. A
   * cursor stays valid while the events it follows are pruned. Each event
   * carries what it did as noted (`noteEventEffects`). Throws a
   * `RangeError` for a bad limit and a `TypeError` for a cursor no listing
   * handed out.
   */
  listEvents?(query: EventListQuery): Promise<{ events: EventRecord[]; cursor?: string }>

  /**
   * Adds to a held event's `runs` and `resumed` the ids of `effects` it
   * does not hold yet, keeping their order; an event the store no longer
   * holds is left alone. Atomic, like `createRun`: notes racing from
   * several processes all land.
   */
  noteEventEffects?(id: string, effects: EventEffects): Promise<void>

  /**
   * Runtime schedules (`TaskRuntime.schedules`, types/schedules.ts): a
   * store that keeps them has all four; each tick of one is a `schedule`
   * timer whose `runId` is the schedule's id.
   */
  putSchedule?: ScheduleStore['putSchedule']
  getSchedule?: ScheduleStore['getSchedule']
  listSchedules?: ScheduleStore['listSchedules']
  deleteSchedule?: ScheduleStore['deleteSchedule']

  /** Signals (types/signals.ts): a store that keeps them has all three (`SignalStore`). */
  putSignal?: SignalStore['putSignal']
  takeSignal?: SignalStore['takeSignal']
  listSignals?: SignalStore['listSignals']

  /** Updates (types/updates.ts): a store that keeps them has all four (`UpdateStore`). */
  putUpdate?: UpdateStore['putUpdate']
  answerUpdate?: UpdateStore['answerUpdate']
  getUpdate?: UpdateStore['getUpdate']
  listUpdates?: UpdateStore['listUpdates']
}

/**
 * What every run store of svc has besides the `RunStore` calls the engine
 * makes: one shape for a count and a shutdown whatever holds the runs. Both
 * are promises because a database answers asynchronously; a store in memory
 * answers them at once.
 *
 * ```ts
 * const server = await startSvcServer({ apiRoutes, pages, store })
 * // on shutdown, after the server (whose runs still write to the store):
 * await server.close()
 * await store.close()
 * ```
 */
export interface StoreLifecycle {
  /**
   * How many runs the store holds, finished ones included (retention and
   * `maxRuns` remove those). A durable store counts what is committed.
   */
  size(): Promise<number>

  /**
   * Lets go of what the store holds open (connections, a file, listeners),
   * once the writes already asked for are done; calls made on it later
   * reject. Idempotent: a second call does nothing more. A store that holds
   * nothing open (memory, or a Durable Object's storage, which its object
   * owns) resolves at once and goes on answering.
   */
  close(): Promise<void>
}

/** What `RunStore.listEvents` lists. */
export interface EventListQuery {
  /** Only events of this name. */
  name?: string
  /** Most events on the page. */
  limit: number
  /** The `cursor` of the page before. */
  cursor?: string
}

/** What one event did, as `RunStore.noteEventEffects` adds it to the event. */
export interface EventEffects {
  /** Ids of the runs it started. */
  runs?: string[]
  /** Ids of the runs whose `ctx.step.waitForEvent` it met. */
  resumed?: string[]
}

/** An event as a store holds it. */
export interface EventRecord {
  id: string
  name: string
  /** Absent when the event was sent without data. */
  data?: unknown
  /** When it was first sent (ISO). */
  time: string
  /** Ids of the runs it started, once noted (`noteEventEffects`). */
  runs?: string[]
  /** Ids of the runs whose `ctx.step.waitForEvent` it met, once noted. */
  resumed?: string[]
}

/** What `startQueued` resolves to. */
export interface StartedRuns {
  /** The runs it moved to `running`, in creation order. */
  started: RunRecord[]
  /** When the rate limit frees a place for a run it blocked (ISO), and that run. */
  wake?: { at: string; runId: string }
}
