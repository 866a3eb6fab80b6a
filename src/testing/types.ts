/** The options and the API of a test runtime (`createTestRuntime`, docs/testing.md). */
import type { EventSchemas } from '../runtime/events/schemas.ts'
import type { RunQuery, RunStore } from '../runtime/tasks/store/store.ts'
import type {
  CancelledRun,
  CancelOptions,
  ReplayOptions,
  CompleteTokenResult,
  Logger,
  RunRecord,
  RunStatus,
  RuntimeApiRoute,
  SendEventOptions,
  SentEvent,
  TaskRuntime,
  TriggerOptions,
} from '../types.ts'
import type { TaskNameArg, TaskPayloadArgs, TaskResult } from '../runtime/types/task-registry.ts'
import type { SendSignalOptions, SentSignal } from '../runtime/types/signals.ts'
import type { UpdateRunOptions } from '../runtime/types/updates.ts'
import type { Duration } from './duration.ts'
import type { Waiting } from './waiting.ts'

export type { Duration } from './duration.ts'
export type { Waiting } from './waiting.ts'

/** Where the virtual clock starts unless the test says otherwise: a fixed instant, so records compare from run to run. */
export const DEFAULT_START = '2030-01-01T00:00:00.000Z'

export interface TestRuntimeOptions {
  /** The app's directory: its task routes (`src/api`) and event schemas (`src/events.ts`) are loaded as `svc dev` loads them. Give this or `routes`. */
  root?: string
  /** Or the task routes themselves, each `{ path, module }` with the route file's exports (`module: await import('../src/api/jobs/welcome.ts')`). */
  routes?: readonly RuntimeApiRoute[]
  /** The app's event schemas (the `events` export of `src/events.ts`), which `sendEvent` checks data against. @default the app's, with `root` */
  events?: EventSchemas
  /**
   * Where runs are kept: a `SqliteRunStore` on a temporary file or a
   * `PostgresRunStore`, to test against the store production uses. The
   * clock stays virtual. Run ids are then random, as in production, and the
   * store is yours to close after `t.close()`.
   * @default a memory store, with run ids in sequence
   */
  store?: RunStore
  /** When the virtual clock starts. @default DEFAULT_START, 2030-01-01T00:00:00Z */
  start?: Date | string | number
  /** The version every run records (`RunRecord.version`). @default each route's own */
  version?: string
  /** Receives the runtime's warnings (a retry, a failed run). @default kept in `t.logs`, printed nowhere */
  logger?: Logger
  /** Most handlers running at once. @default 100 */
  maxConcurrentRuns?: number
  /**
   * How long finished runs are kept, in seconds, as `createTaskRuntime`
   * takes it; on a durable store, its timer comes due every ten minutes of
   * the clock.
   * @default false: every run is kept for the test to read
   */
  retention?: number | false
  /**
   * How long, in real milliseconds, a handler may go on without the clock
   * moving before `advance` and `run` give up on it (a step that awaits
   * real time or the network: mock it with `t.mockStep`).
   * @default 2000
   */
  settleMs?: number
}

/** What a mock of a step's function is given: the run's input and id. */
export interface StepMockCall {
  input: unknown
  runId: string
}

/** A mocked step's output: the value itself, or a function of the run that returns it (or a promise of it). */
export type StepMock = unknown

/** A live run that `advanceUntilIdle` left, and what only the test can give it. */
export interface StillWaiting {
  runId: string
  task: string
  /** What it waits on (`t.waitingOn`), with the sentence that says how to give it. */
  waiting: Waiting | undefined
  message: string
}

/** A run's record as `t.run` returns it, its `result` typed from the task's registry entry. */
export type TestRun<Result = unknown> = Omit<RunRecord, 'result'> & { result?: Result }

export interface TestRuntime {
  /** The task runtime under test: `trigger`, `getRun`, `listRuns` and the rest, as in production. A new one after `deploy`. */
  readonly runtime: TaskRuntime
  /** What the runtime logged, when no `logger` was given. */
  readonly logs: ReadonlyArray<{ level: 'info' | 'warn' | 'error'; message: string }>
  /** The virtual time. */
  now(): Date
  /** Starts a run as `enqueue` does and lets it go as far as it can without the clock moving; its record then. */
  trigger<N extends string>(name: TaskNameArg<N>, ...args: TaskPayloadArgs<N, TriggerOptions>): Promise<TestRun<TaskResult<N>>>
  /** Starts a run and moves the clock until it finishes (`advanceUntilIdle`); its record. Throws, naming the wait, if it cannot finish without the test. */
  run<N extends string>(name: TaskNameArg<N>, ...args: TaskPayloadArgs<N, TriggerOptions>): Promise<TestRun<TaskResult<N>>>
  /** Moves the clock by `duration`, running everything that comes due on the way, in time order. */
  advance(duration: Duration): Promise<void>
  /** Runs what is due now, without moving the clock. */
  runUntilIdle(): Promise<void>
  /**
   * Moves the clock from due time to due time until every run has finished
   * or waits on what only the test can give (a token, an event), and
   * resolves to those that wait, each with what it waits on and how to give
   * it (`[]` when every run finished).
   */
  advanceUntilIdle(options?: { maxTimers?: number }): Promise<StillWaiting[]>
  sendEvent(name: string, data?: unknown, options?: SendEventOptions): Promise<SentEvent>
  completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult>
  /** Sends a signal to a run (`TaskRuntime.sendSignal`), and lets what it resumes go as far as it can without the clock moving. */
  sendSignal(runId: string, name: string, data?: unknown, options?: SendSignalOptions): Promise<SentSignal>
  /**
   * Sends an update to a run (`TaskRuntime.updateRun`) and resolves to its
   * answer, once the run gives it without the clock moving; rejects as
   * `updateRun` does, or, when the run cannot answer without the clock
   * moving (it is delayed, say), naming what it waits on.
   */
  updateRun<Result = unknown>(runId: string, name: string, data?: unknown, options?: UpdateRunOptions): Promise<Result>
  /** Cancels a run, and the child runs it waits on unless `options.children` is `'none'` (`TaskRuntime.cancel`). */
  cancel(runId: string, options?: CancelOptions): Promise<CancelledRun>
  /** Starts a new run of the run's task (`TaskRuntime.replay`), from a step with `{ fromStep }`, and lets it go as far as it can without the clock moving. */
  replay(runId: string, options?: ReplayOptions): Promise<RunRecord>
  getRun(runId: string): Promise<RunRecord | undefined>
  /** The runs of a task or status, or with tags, metadata or a creation time (`RunQuery`), newest first. */
  runs(query?: TestRunsQuery): Promise<RunRecord[]>
  /** What a run waits on, or `undefined` when it waits on nothing (it runs, or it has finished). */
  waitingOn(runId: string): Promise<Waiting | undefined>
  /** Replaces the function of `ctx.step.run(stepKey, fn)` in `task` with `mock`: the step is recorded with what it returns, as any other. */
  mockStep(task: string, stepKey: string, mock: (call: StepMockCall) => unknown): void
  /** Replaces the function of `ctx.step.run(stepKey, fn)` in `task`: the step is recorded with `output`. */
  mockStep(task: string, stepKey: string, output: StepMock): void
  /** How many times the function of step `stepKey` of `task` (or its mock) was really called: a replayed step is not. */
  stepCalls(task: string, stepKey: string): number
  /**
   * Replaces the app's code, as a deploy does: this runtime stops, and one
   * on the new `routes` (or the app at `root`, loaded again) starts on the
   * same store and clock and picks up the runs where they stopped. A run
   * asleep across it replays its recorded steps on the new code, which is
   * how a patch (`ctx.patched`) is tested.
   */
  deploy(app: TestDeploy): Promise<void>
  close(): Promise<void>
}

/** An app's task routes and event schemas, as given or as loaded from its directory. */
export interface LoadedApp {
  routes: readonly RuntimeApiRoute[]
  events: EventSchemas | undefined
}

/** What `t.deploy()` puts in place of the app's code. */
export interface TestDeploy {
  /** The app's directory, loaded again; or `routes`. */
  root?: string
  routes?: readonly RuntimeApiRoute[]
  events?: EventSchemas
  /** The version the new code's runs record. @default each route's own */
  version?: string
}

/** What `t.runs(query)` filters on: a task and status, and the search fields of `RunQuery`. */
export interface TestRunsQuery extends Pick<RunQuery, 'tags' | 'metadata' | 'from' | 'to'> {
  task?: string
  status?: RunStatus | readonly RunStatus[]
}
