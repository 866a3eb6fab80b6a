/** What a task's handler is given: `ctx`, and the durable steps of `ctx.step`. */
import type { UpdateHandler } from './updates.ts'
import type { EnqueueOptions } from './runs.ts'
import type { TaskNameArg, TaskPayloadArgs, TaskResult } from './task-registry.ts'
import type { EventNameArg, ReceivedEventData } from './event-registry.ts'
import type { ReceivedSignal } from './signals.ts'

/** The argument of a task's `POST(ctx)` handler. */
export interface TaskContext<Input = unknown> {
  /** 1-based attempt number; suspensions do not count. */
  attempt: number
  /** The validated payload; `{ _cron: true }` for scheduled runs. */
  input: Input
  step: StepApi
  /**
   * Aborted when the attempt times out (reason: an `Error` named
   * `TimeoutError`), when the run is cancelled (a `RunCancelledError`), or
   * when the runtime closes or loses the run's lease on a shared store (an
   * `Error` named `AbortError`). Once it is aborted, nothing the handler
   * does changes the run: later steps throw and their outputs are dropped.
   */
  signal: AbortSignal
  runId: string
  taskName: string
  /** The version of the task's code this run started on, or moved to (`RunRecord.version`; docs/deploying.md "Runs across deploys"); absent when the app sets none. */
  version: string | undefined
  /**
   * The time of the runtime's clock: the real time in production, the
   * virtual time under `svcjs/testing` (docs/testing.md). Read the time with
   * it, rather than `Date.now()`, where a test must control it; like
   * `Date.now()`, it is read again on a replay, so keep a time a later step
   * depends on in a step's output.
   */
  now(): Date
  /**
   * Sends a named chunk of data to the run's subscribers
   * (`subscribeRun`'s `onChunk`, `GET /__tasks/runs/<id>/stream`), for a
   * progress bar or generated text (docs/realtime.md "Sending data as the
   * run goes"). `name` is 1 to 64 letters, digits, '.', '-' or '_';
   * `data` is a JSON value of at most 64 KiB. A bad argument throws a
   * `TypeError` (a `RangeError` for a chunk too large) at once.
   *
   * The run keeps its last 100 chunks, and at most 64 KiB of their data,
   * so a late subscriber catches up; older ones are dropped, and each
   * chunk's `seq` tells how many came before it. The promise resolves once
   * the chunk is stored; chunks sent without waiting for it are stored
   * together, in order, and before the run's end.
   *
   * A handler runs again from the top on a retry and on a resume: the
   * calls made outside a running `ctx.step.run` are counted in order, and
   * those the run has recorded already are skipped, so a replay sends
   * nothing twice. Calls made while a `ctx.step.run` function runs send
   * their chunks whenever that function runs: a step replayed from its
   * record sends none, a step run again (a retry) sends them again. Called
   * once the attempt is over (ended, timed out, cancelled), it throws as a
   * step would.
   */
  stream(name: string, data: unknown): Promise<void>
  /**
   * Logs kept with the run (docs/observability.md "Logs kept with each
   * run"): each entry records its time, the attempt and the `ctx.step.run`
   * whose function logged it, and shows in `GET /__tasks/runs/<id>/logs`,
   * the run's record, the dashboard, `svc runs logs` and `svc dev`'s
   * output; with OpenTelemetry set up, each is also a log record.
   *
   * The run keeps its last 500 entries (at most 128 KiB); older ones are
   * dropped and counted. A message is cut at 4,096 characters; `attributes`
   * is an object of JSON values of at most 8 KiB, else a note replaces it.
   * Logging never throws, and a replay logs nothing twice, as
   * `ctx.stream` sends nothing twice.
   */
  readonly log: RunLogger
  /**
   * Small JSON the run keeps up to date while it runs: a stage, progress,
   * an id in another system (docs/run-control.md "Tags, metadata and
   * search"). It shows in the run's record and the dashboard, and runs are
   * found by its top-level keys (`GET /__tasks/runs?metadata.stage=sent`).
   * At most 4 KB of JSON; keys are 1 to 64 characters. `set` and `delete`
   * throw at once for a bad key, a value JSON cannot hold or metadata that
   * would pass the bound, and resolve once the change is stored.
   */
  readonly metadata: RunMetadata
  /**
   * Whether this run takes the new branch of patch `id`, for changing a
   * task while runs of it are in flight (docs/tasks.md "Changing a task
   * under running runs"): `true` for a run that reaches this point on code
   * that has the patch, `false` for one that passed this point before it
   * did. The answer is recorded like a step (`patch:<id>`), so it never
   * changes within a run.
   *
   * ```ts
   * if (await ctx.patched('notify-by-task')) await ctx.step.enqueue('notify', 'jobs.email', { to })
   * else await ctx.step.run('notify', () => sendEmail(to))
   * ```
   */
  patched(id: string): Promise<boolean>
  /**
   * Marks patch `id` whose old branch is removed: a run that passed this
   * point on the old branch fails its attempt with `PatchRemovedError`
   * rather than go on another way; any other run goes on.
   */
  deprecatePatch(id: string): Promise<void>
  /**
   * The signals named `name` sent to this run (`sendSignal`), in the order
   * they were sent, each read once: every step of the loop is a
   * `ctx.step.waitForSignal` of its own, keyed `signals:<name>:<n>`, so a
   * replay reads the same signals again without waiting. The loop ends
   * only where the handler breaks out of it (docs/tasks.md "Signals").
   *
   * ```ts
   * for await (const message of ctx.signals<{ text: string }>('message')) {
   *   if (message.data?.text === 'bye') break
   * }
   * ```
   */
  signals<T = unknown>(name: string): AsyncIterable<ReceivedSignal<T>>
  /**
   * Declares how this run answers updates named `name` (`updateRun`):
   * `input`, a schema, checks the data first (data that fails it is
   * refused with 400 and the run goes on untouched), then `handler`
   * answers, and what it returns goes back to the caller. The answer is
   * kept with the update, so the handler runs once per update id, and a
   * request again with the id gets the kept answer. Declare every handler
   * before the run's first wait: an update whose name the run has not
   * declared by the time it waits or ends is refused (`UPDATE_NOT_HANDLED`).
   * Throws a `TypeError` for a bad name or a name declared twice
   * (docs/tasks.md "Updates").
   *
   * ```ts
   * const cart: string[] = []
   * ctx.onUpdate('add', { input: v.string(), handler: (item) => cart.push(item) })
   * ```
   */
  onUpdate<Input = unknown, Result = unknown>(name: string, update: UpdateHandler<Input, Result>): void
}

/** The request a callback URL received (`ctx.step.createCallback`). */
export interface CallbackRequest {
  method: 'POST' | 'GET'
  /** A JSON body parsed, a form's fields (or a GET's query) as an object, any other body as text; `null` for none. */
  body: unknown
  /** The request's headers, but for credentials (`authorization`, `cookie`, `proxy-authorization`). */
  headers: Record<string, string>
  /** When it was received (ISO 8601). */
  receivedAt: string
}

/** `ctx.metadata`: the run's metadata, changed key by key. */
export interface RunMetadata {
  /** The value of `key` (a copy), or `undefined`. */
  get(key: string): unknown
  /** The whole metadata (a copy). */
  current(): Record<string, unknown>
  /** Sets `key` to a JSON value (`undefined` deletes it). */
  set(key: string, value: unknown): Promise<void>
  delete(key: string): Promise<void>
}

/** `ctx.log`: each method keeps an entry with the run, and returns at once. */
export interface RunLogger {
  info(message: string, attributes?: Record<string, unknown>): void
  warn(message: string, attributes?: Record<string, unknown>): void
  error(message: string, attributes?: Record<string, unknown>): void
}

/**
 * `ctx.step`: durable steps whose outputs are recorded and replayed.
 * An unmet wait (`waitForTask`, `sleep`, `sleepUntil`, `waitForToken`)
 * unwinds the handler with an internal suspend signal that is not an
 * `Error`. A `try/catch` around a step call should rethrow it:
 * `if (isSuspension(error)) throw error`. (A swallowed signal still
 * suspends the run, with a warning.)
 */
export interface StepApi {
  /**
   * Runs `fn` once and records its output: a replay returns the output
   * without running it. `fn` is given the step's `StepInfo`, whose
   * `idempotencyKey` is for the effects it asks other services for.
   */
  run<T>(key: string, fn: (step: StepInfo) => T | Promise<T>, opts?: StepRunOptions<T>): Promise<T>
  /**
   * Runs `fn` in a transaction on the run store's own database and records
   * the step in that same transaction, so the app's writes and the step's
   * record commit together or not at all: a replay returns the recorded
   * output and runs nothing, and a failure rolls back both (docs/tasks.md
   * "Effects exactly once: transactional steps"). `tx` is the store's:
   * - SQLite: a `SqlTransaction`; `fn` may be async, for up to the store's
   *   `transactionTimeoutMs`, its other writes waiting meanwhile;
   * - a Durable Object: a `SqlTransaction`, and `fn` must be synchronous
   *   (its SQL runs inside `transactionSync`);
   * - Postgres: a `postgres` transaction (`PostgresTransaction`), and `fn`
   *   may be async.
   *
   * The memory store has no database to share, and the call fails there.
   *
   * ```ts
   * await ctx.step.transaction('record-order', (tx: SqlTransaction) => {
   *   tx.run('INSERT INTO orders (id, total) VALUES (?, ?)', ctx.input.id, ctx.input.total)
   * })
   * ```
   */
  transaction<T, Tx = SqlTransaction>(key: string, fn: (tx: Tx, step: StepInfo) => T | Promise<T>): Promise<Awaited<T>>
  enqueue<N extends string>(key: string, task: TaskNameArg<N>, ...args: TaskPayloadArgs<N, EnqueueOptions>): Promise<{ runId: string }>
  waitForTask<N extends string>(
    key: string,
    task: TaskNameArg<N>,
    ...args: TaskPayloadArgs<N, EnqueueOptions>
  ): Promise<ChildRunResult<TaskResult<N>>>
  sleep(key: string, seconds: number): Promise<void>
  sleepUntil(key: string, date: Date | string): Promise<void>
  waitForToken<T = unknown>(key: string, opts?: { timeoutSeconds?: number }): Promise<{ payload?: T } | { timedOut: true }>
  /**
   * A URL that wakes this run, safe to hand to a third party (docs/tasks.md
   * "Callback URLs"): the first request to it (`POST` by default, or `GET`)
   * is kept, whenever it comes, and `wait()` resolves to it, or to
   * `{ timedOut: true }` once `timeoutSeconds` (default a week) have
   * passed. The URL carries a signed, single-use claim that expires with
   * the callback; it needs no other credential. Every replay returns the
   * same URL. Needs `SVC_PUBLIC_URL` (the app's public address) outside
   * development, and the task secret.
   */
  createCallback(
    key: string,
    opts?: { timeoutSeconds?: number; method?: 'POST' | 'GET' },
  ): Promise<{ id: string; url: string; expiresAt: string; wait(): Promise<CallbackRequest | { timedOut: true }> }>
  /**
   * Waits for an event named `name` whose data holds every value of
   * `match` at its path, and resolves to `{ event }` (its id, name, data and
   * time), or to `{ timedOut: true }` after `timeoutSeconds`. An event sent
   * up to `lookbackSeconds` before the wait began (default 0, at most a
   * day) also meets it, so an event sent just before the wait is not lost
   * (docs/events.md). With the app's event schemas typed (`svc types`), the
   * data of a declared name has its schema's output type; `T` says
   * otherwise.
   */
  /**
   * Waits for a signal named `name` sent to this run (`sendSignal`,
   * `POST /__tasks/runs/<id>/signals/<name>`), and resolves to it (its id,
   * name, data and when it was sent), or to `{ timedOut: true }` after
   * `timeoutSeconds`. A signal sent before the wait began is kept for it:
   * each signal is taken by one wait, oldest first (docs/tasks.md "Signals").
   */
  waitForSignal<T = unknown>(key: string, name: string, opts?: { timeoutSeconds?: number }): Promise<ReceivedSignal<T> | { timedOut: true }>
  waitForEvent<T = never, N extends string = string>(
    key: string,
    name: EventNameArg<N>,
    opts?: WaitForEventOptions,
  ): Promise<{ event: ReceivedEvent<[T] extends [never] ? ReceivedEventData<N> : T> } | { timedOut: true }>
}

/** A value a SQL statement's `?` parameter takes, on SQLite and on a Durable Object. */
export type SqlParam = string | number | bigint | null | Uint8Array

/**
 * The handle `ctx.step.transaction` gives its function on SQLite and on a
 * Durable Object: statements on the store's database, inside the
 * transaction that records the step. It works only while the function runs;
 * `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE` are refused, since
 * the transaction is the step's.
 */
export interface SqlTransaction {
  /** Runs one statement and returns its rows, as objects by column name. */
  query<Row extends Record<string, unknown> = Record<string, unknown>>(sql: string, ...params: SqlParam[]): Row[]
  /** Runs one statement that writes; `changes` is how many rows it inserted, updated or deleted. */
  run(sql: string, ...params: SqlParam[]): { changes: number }
}

/** Options of `ctx.step.run`. */
export interface StepRunOptions<T> {
  /**
   * Undoes the step once it completed, should the run fail for good (its
   * retries spent, or its deadline passed): the undos of the completed
   * steps run in reverse order, each recorded as a step of its own
   * (`compensate:<key>`), and the run then ends `failed`, or
   * `compensation_failed` if one kept failing (docs/tasks.md
   * "Compensation"). It is given the step's output.
   */
  compensate?: (output: Awaited<T>) => unknown
}

/** What a `ctx.step.run` function is given. */
export interface StepInfo {
  /** The step's key. */
  key: string
  /** The attempt the function runs in (1-based). */
  attempt: number
  /**
   * A key for the effect the function asks another service for, such as
   * Stripe's `Idempotency-Key` or an email API's: the same for every
   * attempt, replay and process that runs this step of this run, and for
   * no other step or run (`svc:<run id>:<step key>`). A step whose record
   * was lost (the process died after the effect, before the record) runs
   * again with the same key, and the service answers it as it did
   * (docs/tasks.md "Effects exactly once: idempotency keys").
   */
  idempotencyKey: string
}

/** Options of `ctx.step.waitForEvent`. */
export interface WaitForEventOptions {
  /** Data paths and the values the event must hold there, such as `{ orderId: ctx.input.orderId }`. */
  match?: Record<string, unknown>
  /** How long to wait, in seconds; without it, the wait has no end. */
  timeoutSeconds?: number
  /**
   * How far back, in seconds, an event sent before the wait began still meets it (at most a day).
   * @default 0
   */
  lookbackSeconds?: number
}

/** The event a `waitForEvent` resolved with. */
export interface ReceivedEvent<T = unknown> {
  id: string
  name: string
  data?: T
  /** When it was sent (ISO). */
  time: string
}

/**
 * What `step.waitForTask` resolves to. A child's failure is returned, never
 * thrown. A cancelled child resolves to `{ ok: false, cancelled: true,
 * error: 'Run <id> of task "<name>" was cancelled' }`.
 */
export interface ChildRunResult<Result = unknown> {
  ok: boolean
  /** The child's result; typed by task name once `.svc/types.d.ts` registers the task. */
  result?: Result
  error?: string
  /** Present, `true`, when the child run was cancelled. */
  cancelled?: true
}
