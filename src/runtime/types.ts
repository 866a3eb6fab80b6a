/**
 * Types of the edge-safe runtime half: route files and their config, loaded
 * routes and pages, schemas, tasks and runs, and the HTTP surface. The
 * scanner's output shapes (`ManifestRoute`, `ManifestPage`) live with the
 * build-time half, in `src/manifest/types.ts`; a loaded route is a manifest
 * entry plus its module.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { ManifestPage, ManifestRoute } from '../manifest/types.ts'
import type { TaskDefinition } from './tasks/definitions.ts'
import type { ScheduledJob } from './tasks/scheduler.ts'
import type { RunQuery, RunStore } from './tasks/store.ts'

// ---------------------------------------------------------------------------
// Routes and compute
// ---------------------------------------------------------------------------

/** How a route is invoked. `serverless` is the default when a file declares nothing. */
export type RouteKind = 'serverless' | 'hot' | 'task'

/** HTTP method handlers a route file may export. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS'

export const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']

/** Memory sizes a `function`-class route may select. */
export type FunctionMemory = '1gb' | '4gb' | '6gb' | '8gb' | '12gb'

export const FUNCTION_MEMORY: readonly FunctionMemory[] = ['1gb', '4gb', '6gb', '8gb', '12gb']

/** Where a route runs. */
export type ComputeClass = 'function' | 'dedicated'

/** The `compute` object as a route file declares it. */
export interface ComputeConfig {
  /** @default 'function' (hot routes: 'dedicated') */
  class?: ComputeClass
  /**
   * `function`: one of `1gb`, `4gb`, `6gb`, `8gb`, `12gb`.
   * `dedicated`: any size such as `'512mb'` or `'2gb'`; preserved as declared.
   * @default '1gb' for `function`
   */
  memory?: string
  /** Dedicated only: whole CPUs, preserved in the manifest. */
  cpu?: number
}

/** The exported `route` object of a route file. Every field must be a static literal. */
export interface RouteConfig {
  /** @default 'serverless' */
  kind?: RouteKind
  /** Task only: extra attempts after the first failure. @default 0 */
  retries?: number
  /** Task only: per-attempt timeout in milliseconds. @default 30000 */
  timeout?: number
  /** @default { class: 'function', memory: '1gb' } */
  compute?: ComputeConfig
  /** Hot only: Origin allowlist for the WebSocket handshake. Unset means open. */
  origins?: string[]
  /** Task only: five-field cron expression (may also be a top-level `schedule` export). */
  schedule?: string
  /** Task only: IANA time zone the schedule is read in. @default 'UTC' */
  timezone?: string
  /**
   * Task only: at most this many attempts of the task run at once (per value
   * of `key`, a dotted path into the input such as `'input.userId'`); runs
   * beyond it wait as `queued` and start in order of creation. A run with no
   * value at `key` shares one bucket with every other such run.
   */
  concurrency?: number | { limit: number; key?: string }
  /**
   * Task only: at most `limit` run starts per `periodSeconds` (a sliding
   * window), per value of `key`; runs beyond it wait as `queued`.
   */
  rateLimit?: { limit: number; periodSeconds: number; key?: string }
  /**
   * Task only: triggers within `seconds` of the last one for the same `key`
   * value collapse into one run, with the latest input, started `seconds`
   * after the last trigger.
   */
  debounce?: { seconds: number; key?: string }
}

/** Page render modes. Only `server` and `hybrid` render at request time. */
export type PageMode = 'static' | 'client' | 'server' | 'hybrid'

/** A route file's exports, once loaded. */
/**
 * A function an app module exports: the runtime calls it with arguments of
 * its own (a request, a reply, a peer), and app code declares them with
 * whatever types it likes, so the export is typed as loosely as a module's.
 */
// biome-ignore lint/suspicious/noExplicitAny: app modules type their own parameters
export type ModuleFunction = (...args: any[]) => unknown

export interface RouteModule {
  route?: RouteConfig
  kind?: RouteKind
  schedule?: string
  input?: SchemaLike
  schema?: SchemaDefinition
  websocket?: ModuleFunction
  GET?: ModuleFunction
  POST?: ModuleFunction
  PUT?: ModuleFunction
  DELETE?: ModuleFunction
  PATCH?: ModuleFunction
  HEAD?: ModuleFunction
  OPTIONS?: ModuleFunction
  [exportName: string]: unknown
}

/**
 * A manifest entry plus its loaded module exports. Only `path` and `module`
 * are required: fields left out are read from the module's `route`/`kind`
 * exports at runtime, so routes can be written by hand.
 */
export interface RuntimeApiRoute extends Partial<ManifestRoute> {
  path: string
  module: RouteModule
}

/** A page module: the default export renders. */
export interface PageModule {
  default: ModuleFunction
  page?: { mode?: PageMode; revalidate?: number; tags?: string[] }
  [exportName: string]: unknown
}

/** A manifest page plus its loaded module. */
export interface RuntimePage extends Partial<ManifestPage> {
  path: string
  module: PageModule
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

/** Any schema that implements the Standard Schema spec (valibot, zod, arktype, …). */
export type SchemaLike<T = unknown> = StandardSchemaV1<unknown, T>

/** Where a validation issue was found. */
export type ValidationTarget = 'body' | 'query' | 'params' | 'headers' | 'input'

/** Schemas for each part of a request; built with `defineSchema`. */
export interface SchemaDefinition {
  body?: SchemaLike
  query?: SchemaLike
  params?: SchemaLike
  headers?: SchemaLike
}

/** One entry of a `VALIDATION_FAILED` body's `details`. */
export interface ValidationIssue {
  target: ValidationTarget
  /** Key path inside the target; empty for the value itself. */
  path: (string | number)[]
  message: string
}

// ---------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------

/**
 * Run states. `scheduled` is a delayed run that has not started yet.
 * `queued` waits for a slot of its task's `concurrency` or `rateLimit`.
 * `completed`, `failed` and `cancelled` are finished: a finished run never
 * changes status again. `cancelled` comes from `cancel()` (`cancelRun`,
 * `POST /__tasks/runs/<id>/cancel`).
 */
export type RunStatus = 'scheduled' | 'queued' | 'running' | 'suspended' | 'completed' | 'failed' | 'cancelled'

/** How a run started. `replay`: `replay()` started it with the input of run `replayOf`. */
export type RunTrigger = 'manual' | 'cron' | 'enqueue' | 'child' | 'replay'

export interface Attempt {
  /** 1-based. */
  index: number
  /** ISO timestamp. */
  startedAt: string
  durationMs: number
  /** Present when the attempt failed. Message only, never a stack trace. */
  error?: string
}

/**
 * The kind of call that recorded a step. `sleep` and `sleepUntil` are one
 * kind: both wait for an instant and replay the same way.
 */
export type StepKind = 'run' | 'enqueue' | 'waitForTask' | 'sleep' | 'waitForToken'

export interface StepRecord {
  status: 'completed' | 'timed_out'
  output?: unknown
  /**
   * The call that recorded the step; a replay that reaches the key through
   * another kind fails with `StepMismatchError`. Absent in records written
   * before kinds were kept: such a step matches any call.
   */
  kind?: StepKind
}

/**
 * What a suspended run waits for (`RunEnvelope.suspended.waitpoint`):
 * - `sleep`: `step.sleep`/`step.sleepUntil`; resumes at `until`.
 * - `task`: `step.waitForTask`; resumes when child run `runId` of `task`
 *   completes or fails.
 * - `token`: `step.waitForToken`; resumes when token `tokenId` is completed
 *   (`completeToken`, `POST /__tasks/tokens/<tokenId>`) or at `timeoutAt`.
 *   Token ids are `<runId>:<stepKey>` (see `tokenIdFor`).
 */
export type Waitpoint =
  | { type: 'sleep' /** ISO timestamp */; until: string }
  | { type: 'task'; task: string; runId: string }
  | { type: 'token'; tokenId: string /** ISO timestamp */; timeoutAt?: string }

/** The run envelope, as the spec defines it. */
export interface RunEnvelope {
  ok: boolean
  taskName: string
  attempts: Attempt[]
  /** Present when the run completed. */
  result?: unknown
  /** Present while a step has suspended the run. */
  suspended?: { stepKey: string; waitpoint: Waitpoint }
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
  parentRunId?: string
  /** Runs started by `replay()`: the run whose task and input this one repeats. */
  replayOf?: string
}

export interface EnqueueOptions {
  /** Delay before the task runs. Durable only with a durable store. */
  delaySeconds?: number
  /** Enqueues with a key already seen return the existing run. */
  idempotencyKey?: string
}

/** What `enqueue()` returns. Extra fields are preserved. */
export interface EnqueueResult {
  runId: string
  status: RunStatus
  [field: string]: unknown
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

/**
 * `ctx.step`: durable steps whose outputs are recorded and replayed.
 * An unmet wait (`waitForTask`, `sleep`, `sleepUntil`, `waitForToken`)
 * unwinds the handler with an internal suspend signal that is not an
 * `Error`. A `try/catch` around a step call should rethrow it:
 * `if (isSuspension(error)) throw error`. (A swallowed signal still
 * suspends the run, with a warning.)
 */
export interface StepApi {
  run<T>(key: string, fn: () => T | Promise<T>): Promise<T>
  enqueue<N extends string>(key: string, task: TaskNameArg<N>, ...args: TaskPayloadArgs<N, EnqueueOptions>): Promise<{ runId: string }>
  waitForTask<N extends string>(
    key: string,
    task: TaskNameArg<N>,
    ...args: TaskPayloadArgs<N, EnqueueOptions>
  ): Promise<ChildRunResult<TaskResult<N>>>
  sleep(key: string, seconds: number): Promise<void>
  sleepUntil(key: string, date: Date | string): Promise<void>
  waitForToken<T = unknown>(key: string, opts?: { timeoutSeconds?: number }): Promise<{ payload?: T } | { timedOut: true }>
}

// ---------------------------------------------------------------------------
// Typed tasks
// ---------------------------------------------------------------------------

/**
 * Task name → `{ input, result }`, filled in by the `.svc/types.d.ts` that
 * `svc types` (and `svc dev`, `svc build`) writes, through declaration
 * merging (`declare module 'svc' { interface TaskRegistry { … } }`). While it
 * is empty, task names are `string` and payloads and results `unknown`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging
export interface TaskRegistry {}

/** The registered task names; `string` while the registry is empty. */
export type TaskName = [keyof TaskRegistry] extends [never] ? string : Extract<keyof TaskRegistry, string>

/**
 * A task name argument: a registered name, or a name held in a plain
 * `string` (read from a request, say), which cannot be checked before it runs
 * and takes an `unknown` payload.
 */
export type TaskNameArg<N extends string> = string extends N ? N : N extends TaskName ? N : TaskName

/** What a payload for task `N` must be: the input type of its `input` schema; `unknown` for unregistered names. */
export type TaskInput<N extends string> = N extends keyof TaskRegistry
  ? TaskRegistry[N] extends { input: infer Input }
    ? Input
    : unknown
  : unknown

/** The awaited return of task `N`'s handler; `unknown` for unregistered names. */
export type TaskResult<N extends string> = N extends keyof TaskRegistry
  ? TaskRegistry[N] extends { result: infer Result }
    ? Result
    : unknown
  : unknown

/** `payload, opts` after a task name: the payload may be left out only when the task's input accepts `undefined`. */
export type TaskPayloadArgs<N extends string, Options> =
  undefined extends TaskInput<N> ? [payload?: TaskInput<N>, opts?: Options] : [payload: TaskInput<N>, opts?: Options]

/**
 * The type a task's `input` export accepts (`StandardSchemaV1.InferInput`,
 * or the `body` schema of a `defineSchema()` object); `unknown` without one.
 * `M` is the module's type: `typeof import('./src/api/jobs/notify.ts')`.
 */
export type TaskModuleInput<M> = M extends { input: infer Schema } ? SchemaInput<Schema> : unknown

/** The awaited return of a task module's `POST` export. */
// biome-ignore lint/suspicious/noExplicitAny: any handler parameters
export type TaskModuleResult<M> = M extends { POST: (...args: any[]) => infer Result } ? Awaited<Result> : unknown

type SchemaInput<Schema> = Schema extends StandardSchemaV1
  ? StandardSchemaV1.InferInput<Schema>
  : Schema extends { body: StandardSchemaV1 }
    ? StandardSchemaV1.InferInput<Schema['body']>
    : unknown

/** What a handler's `ctx.input` holds for a schema: its validated output. */
export type SchemaOutput<Schema> = Schema extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<Schema>
  : Schema extends { body: StandardSchemaV1 }
    ? StandardSchemaV1.InferOutput<Schema['body']>
    : unknown

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
}

/** A task as `GET /__tasks` and `svc tasks list` describe it. */
export interface TaskSummary {
  name: string
  path: string
  schedule: string | null
  retries: number
  timeout: number
  /** Flow control from the route config (`route.concurrency`, `rateLimit`, `debounce`); null when unset. */
  concurrency: { limit: number; key: string | null } | null
  rateLimit: { limit: number; periodSeconds: number; key: string | null } | null
  debounce: { seconds: number; key: string | null } | null
  /** Runs of the task waiting for a slot. */
  queued: number
  lastRun: { id: string; status: RunStatus; finishedAt: string | null } | null
}

/** What `cancelRun()` resolves to, and the body of `POST /__tasks/runs/<id>/cancel`. */
export interface CancelRunResult {
  id: string
  status: 'cancelled'
}

/** One change of a run, as `onRunChange` listeners and `GET /__tasks/events` see it. */
export interface RunChange {
  id: string
  taskName: string
  status: RunStatus
}

/**
 * Result of completing a `waitForToken` token. `run_cancelled`: the run that
 * waited on it was cancelled, so nothing changed.
 */
export type CompleteTokenResult = 'completed' | 'not_found' | 'already_completed' | 'timed_out' | 'run_cancelled'

export interface TriggerOptions extends EnqueueOptions {
  /** @default 'manual' */
  trigger?: RunTrigger
  /** Parent run, for child runs started by `step.waitForTask`/`step.enqueue`. */
  parentRunId?: string
}

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
   * Cancels a live run (scheduled, queued, running or suspended) and resolves to it,
   * now `cancelled`: aborts the signal of its attempt in flight, removes its
   * timers, makes its tokens answer `run_cancelled`, resolves `waitForRun`
   * callers with it and resumes a parent waiting on it with
   * `{ ok: false, cancelled: true, error }`. Its recorded steps stay.
   * Rejects with `RunNotFoundError` (404 `RUN_NOT_FOUND`) for a run the
   * store does not hold and `RunFinishedError` (409 `RUN_FINISHED`) for a
   * run that already finished.
   */
  cancel(id: string): Promise<RunRecord>
  /**
   * Starts a new run of the run's task with its input (validated again
   * against the task's current schema; a scheduled run's input stays
   * `{ _cron: true }`), with `trigger: 'replay'` and `replayOf: id`.
   * Rejects with `RunNotFoundError`, `TaskNotFoundError` when the task is no
   * longer registered, `ValidationError` or `StoreFullError`.
   */
  replay(id: string): Promise<RunRecord>
  /**
   * Calls `listener` with `{ id, taskName, status }` each time this
   * runtime's engine changes a run (created, started, suspended, resumed,
   * retried, finished, cancelled), and `onEnd` once when the runtime drains
   * or closes, after which nothing more is reported. Returns the function
   * that stops listening. Changes another process makes on a shared store
   * are not reported. Absent on a runtime whose engine lives elsewhere (a
   * worker's view of the Durable Object).
   */
  onRunChange?(listener: (change: RunChange) => void, onEnd?: () => void): () => void
  /** Every task, with its last run, as `GET /__tasks` lists them. */
  listTasks(): Promise<TaskSummary[]>
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

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/** Extra information about the request that only the host knows. */
export interface RequestInfo {
  /** Peer address from the socket; absent on edge and function platforms. */
  remoteAddress?: string
  /**
   * Keeps work started by a request (a background ISR render) alive after
   * the response is sent; edge targets pass their `ctx.waitUntil`.
   */
  waitUntil?: (promise: Promise<unknown>) => void
}

/**
 * Global hooks around HTTP requests. Each is an array, run in order.
 * - `onRequest(req)` may return a `Response` to short-circuit (auth, for example).
 * - `onError(error, req)` may return a `Response` to replace the default 500.
 * - `onResponse(req, res, { durationMs })` observes, and may return a replacement.
 */
export interface GlobalHooks {
  onRequest?: Array<(req: Request) => void | Response | Promise<void | Response>>
  onError?: Array<(error: unknown, req: Request) => void | Response | Promise<void | Response>>
  onResponse?: Array<(req: Request, res: Response, info: { durationMs: number }) => void | Response | Promise<void | Response>>
}

/** Logger used by the runtime. `console` fits. */
export interface Logger {
  info(...args: unknown[]): void
  warn(...args: unknown[]): void
  error(...args: unknown[]): void
}
