/**
 * `createTestRuntime()`: an app's tasks in a unit test, with no server and
 * no network. Runs are kept by the memory store and timed by a virtual
 * clock the test moves (`advance`), so a day's sleep, a retry's backoff, a
 * token's timeout or a week of cron ticks take milliseconds. The engine is
 * the production one: runs are validated, recorded, replayed and retried
 * exactly as under `svc dev`.
 */
import type { EventSchemas } from '../runtime/events/schemas.ts'
import { describe } from '../runtime/describe.ts'
import { getActiveTaskRuntime, setActiveTaskRuntime } from '../runtime/tasks/client/active.ts'
import { createCoreRuntime } from '../runtime/tasks/runtime.ts'
import { clockedCron } from '../runtime/tasks/schedule/clocked-cron.ts'
import { cronerClock } from '../runtime/tasks/schedule/croner-clock.ts'
import { MemoryRunStore } from '../runtime/tasks/store/memory-store.ts'
import type { RunStore } from '../runtime/tasks/store/store.ts'
import { SharedWorkClaims } from '../runtime/tasks/engine/shared-work.ts'
import type { StepCall } from '../runtime/tasks/steps/step-calls.ts'
import type {
  CancelledRun,
  CancelOptions,
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
import { durationMs, type Duration } from './duration.ts'
import { sequentialIds } from './ids.ts'
import { Activity } from './settle.ts'
import { VirtualClock } from './virtual-clock.ts'
import { type Waiting, waitingOf } from './waiting.ts'

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
  /** Cancels a run, and the child runs it waits on unless `options.children` is `'none'` (`TaskRuntime.cancel`). */
  cancel(runId: string, options?: CancelOptions): Promise<CancelledRun>
  replay(runId: string): Promise<RunRecord>
  getRun(runId: string): Promise<RunRecord | undefined>
  /** The runs of a task or status, newest first. */
  runs(query?: { task?: string; status?: RunStatus | readonly RunStatus[] }): Promise<RunRecord[]>
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

/** The test runtime of `app`, with `options` checked but for `root` and `routes` (create.ts reads those, and `load` loads an app's directory). */
export function testRuntime(options: TestRuntimeOptions, app: LoadedApp, load: (root: string) => Promise<LoadedApp>): TestRuntime {
  const start = options.start ?? DEFAULT_START
  const startMs = start instanceof Date ? start.getTime() : typeof start === 'string' ? Date.parse(start) : start
  if (typeof startMs !== 'number' || !Number.isFinite(startMs)) {
    throw new TypeError(`createTestRuntime(): start must be a Date, an ISO 8601 text or epoch milliseconds (got ${describe(start)})`)
  }
  const settleMs = options.settleMs ?? 2000
  const clock = new VirtualClock(startMs)
  const activity = new Activity()
  const logs: Array<{ level: 'info' | 'warn' | 'error'; message: string }> = []
  const keep = (level: 'info' | 'warn' | 'error') => (message: unknown) => logs.push({ level, message: String(message) })
  const logger: Logger = options.logger ?? { info: keep('info'), warn: keep('warn'), error: keep('error') }
  const mocks = new Map<string, StepMock>()
  const calls = new Map<string, number>()
  const stepId = (task: string, key: string) => `${task}\0${key}`

  const given = options.store
  if (given !== undefined && (given === null || typeof given !== 'object' || typeof given.getRun !== 'function')) {
    throw new TypeError(`createTestRuntime(): store must be a run store, such as new SqliteRunStore({ path }) (got ${describe(given)})`)
  }
  const store: RunStore = activity.watch(given ?? new MemoryRunStore({ clock }))
  // In sequence only on a store of the test's own: a store kept across tests would meet the same ids again.
  const ids = given ? undefined : sequentialIds()
  const previous = getActiveTaskRuntime()
  const launch = (app: LoadedApp, version: string | undefined): TaskRuntime => {
    // With the claims of shared work, for a store several processes share (Postgres).
    const made = createCoreRuntime(
      {
        routes: app.routes,
        events: app.events,
        version,
        maxConcurrentRuns: options.maxConcurrentRuns,
        retention: options.retention ?? false,
        logger,
        env: {},
        clock: {
          now: () => clock.now(),
          setTimer: (fn, ms) => {
            activity.note()
            return clock.setTimer(fn, ms)
          },
          clearTimer: (h) => clock.clearTimer(h),
        },
        cron: clockedCron(clock, cronerClock),
        store,
      },
      SharedWorkClaims,
      { callStep: (step, call) => callStep(step, call), ids },
    )
    // enqueue() and completeToken() in the app's code reach this runtime.
    setActiveTaskRuntime(made)
    made.startScheduler()
    return made
  }
  let runtime = launch(app, options.version)

  async function callStep({ taskName, runId, key }: StepCall, call: () => unknown): Promise<unknown> {
    const id = stepId(taskName, key)
    calls.set(id, (calls.get(id) ?? 0) + 1)
    if (!mocks.has(id)) return call()
    const mock = mocks.get(id)
    if (typeof mock !== 'function') return mock
    const run = await runtime.getRun(runId)
    return (mock as (call: StepMockCall) => unknown)({ input: run?.input, runId })
  }

  async function settle(where: string): Promise<void> {
    if (await activity.settle(settleMs)) return
    const running = await runtime.listRuns({ status: 'running' })
    throw new Error(
      `${where}: the runtime was still busy after ${settleMs} ms of real time with no move of the clock (${running.map((run) => `run ${run.id} of "${run.taskName}"`).join(', ') || 'no run running'}). A step that loops or awaits without end keeps it busy; mock it with t.mockStep(task, stepKey, output)`,
    )
  }

  /**
   * When the next thing is due: a timer on the clock, or, on a store several
   * processes share, a timer kept there that no engine holds in-process
   * (one a restart or `deploy` left to the store's sweeps).
   */
  async function nextDue(): Promise<number | undefined> {
    const local = clock.nextDue()
    const kept = await store.shared?.nextDueAt()
    const stored = kept === undefined ? undefined : Date.parse(kept)
    return local === undefined ? stored : stored === undefined ? local : Math.min(local, stored)
  }

  /** Fires what is due next if it is due by `until`, and lets what it starts run; false when nothing is. */
  async function fireNext(until: number, where: string): Promise<boolean> {
    const at = await nextDue()
    if (at === undefined || at > until) return false
    if (clock.nextDue() === at) clock.fireNext(until)
    else {
      // A timer only the store holds: claimed by a sweep, as a process that polls the store would.
      clock.moveTo(at)
      await runtime.sweep?.({ untilMs: Date.now() })
    }
    await settle(where)
    return true
  }

  async function fireUntil(until: number, where: string, maxTimers = Number.POSITIVE_INFINITY): Promise<void> {
    await settle(where)
    for (let fired = 0; await fireNext(until, where); fired++) {
      if (fired >= maxTimers)
        throw new Error(
          `${where}: ${maxTimers} timers fired and runs still had more due; a task that starts itself again without end does this`,
        )
    }
  }

  /** The live runs the clock still moves: all but those waiting, however deep, on a token or event with no timeout. */
  async function movingRuns(): Promise<RunRecord[]> {
    const live = await runtime.listRuns({ status: ['scheduled', 'queued', 'running', 'suspended'] })
    const byId = new Map(live.map((run) => [run.id, run]))
    const onTest = (run: RunRecord, seen: Set<string>): boolean => {
      const waitpoint = run.suspended?.waitpoint
      if (!waitpoint) return false
      if (waitpoint.type === 'token' || waitpoint.type === 'event') return waitpoint.timeoutAt === undefined
      if (waitpoint.type !== 'task') return false
      const child = byId.get(waitpoint.runId)
      return child !== undefined && !seen.has(child.id) && onTest(child, seen.add(child.id))
    }
    return live.filter((run) => !onTest(run, new Set([run.id])))
  }

  async function advanceUntilIdle(where: string, maxTimers = 10_000): Promise<void> {
    await settle(where)
    for (let fired = 0; ; fired++) {
      const moving = await movingRuns()
      if (moving.length === 0) return
      if ((await nextDue()) === undefined) {
        // Only runs that wait on one another, or a handler on real time: give it that time.
        const running = moving.filter((run) => run.status === 'running')
        if (running.length === 0) return
        await activity.wait(Math.min(settleMs, 50))
        await settle(where)
        if ((await nextDue()) === undefined && (await movingRuns()).some((run) => run.status === 'running')) {
          throw new Error(
            `${where}: ${running.map((run) => `run ${run.id} of "${run.taskName}"`).join(', ')} is running, and nothing the clock moves is due: a step awaits real time or I/O; mock it with t.mockStep(task, stepKey, output)`,
          )
        }
        continue
      }
      if (fired >= maxTimers) {
        throw new Error(
          `${where}: ${maxTimers} timers fired and ${moving.length} run(s) still had more due; a task that starts itself again without end does this`,
        )
      }
      await fireNext(Number.POSITIVE_INFINITY, where)
    }
  }

  const startRun = (name: string, args: readonly unknown[]) => runtime.trigger(name, args[0], args[1] as TriggerOptions | undefined)

  async function record<R>(id: string): Promise<TestRun<R>> {
    return (await runtime.getRun(id)) as TestRun<R>
  }

  const t: TestRuntime = {
    get runtime() {
      return runtime
    },
    logs,
    now: () => new Date(clock.now()),
    async trigger(name, ...args) {
      const run = await startRun(name, args)
      await fireUntil(clock.now(), `t.trigger(${describe(name)})`)
      return record(run.id)
    },
    async run(name, ...args) {
      const where = `t.run(${describe(name)})`
      const started = await startRun(name, args)
      await advanceUntilIdle(where)
      const run = (await runtime.getRun(started.id))!
      if (run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled') return run as TestRun<never>
      const waiting = await t.waitingOn(run.id)
      throw new Error(
        `${where}: run ${run.id} is ${run.status} and cannot finish without the test: ${waiting ? describeWaiting(waiting) : 'it waits on other runs'}. Start it with t.trigger() and give it what it waits for`,
      )
    },
    async advance(duration) {
      const ms = durationMs(duration, 't.advance()')
      const target = clock.now() + ms
      await fireUntil(target, 't.advance()', 100_000)
      clock.moveTo(target)
      await fireUntil(target, 't.advance()')
    },
    runUntilIdle: () => fireUntil(clock.now(), 't.runUntilIdle()'),
    async advanceUntilIdle(opts) {
      await advanceUntilIdle('t.advanceUntilIdle()', opts?.maxTimers)
      const live = await runtime.listRuns({ status: ['scheduled', 'queued', 'running', 'suspended'] })
      const timers = await runtime.store.listTimers()
      return live.map((run) => {
        const waiting = waitingOf(run, timers)
        return { runId: run.id, task: run.taskName, waiting, message: waiting ? describeWaiting(waiting) : `it is ${run.status}` }
      })
    },
    async sendEvent(name, data, opts) {
      const sent = await runtime.sendEvent(name, data, opts)
      await fireUntil(clock.now(), 't.sendEvent()')
      return sent
    },
    async completeToken(tokenId, payload) {
      const done = await runtime.completeToken(tokenId, payload)
      await fireUntil(clock.now(), 't.completeToken()')
      return done
    },
    async cancel(runId, opts) {
      const run = await runtime.cancel(runId, opts)
      await fireUntil(clock.now(), 't.cancel()')
      return run
    },
    async replay(runId) {
      const run = await runtime.replay(runId)
      await fireUntil(clock.now(), 't.replay()')
      return record(run.id)
    },
    getRun: (runId) => runtime.getRun(runId),
    runs: (query = {}) => runtime.listRuns({ taskName: query.task, status: query.status }),
    async waitingOn(runId) {
      const run = await runtime.getRun(runId)
      if (!run) throw new Error(`t.waitingOn(${describe(runId)}): no run has this id`)
      return waitingOf(run, await runtime.store.listTimers())
    },
    mockStep(task: string, stepKey: string, mock: StepMock) {
      if (!runtime.tasks.has(task)) {
        throw new TypeError(
          `t.mockStep(${describe(task)}): no task has this name; the tasks are ${[...runtime.tasks.keys()].join(', ') || 'none'}`,
        )
      }
      if (typeof stepKey !== 'string' || stepKey === '')
        throw new TypeError(
          `t.mockStep(${describe(task)}, stepKey): stepKey must be the key a ctx.step.run call gives (got ${describe(stepKey)})`,
        )
      mocks.set(stepId(task, stepKey), mock)
    },
    stepCalls: (task, stepKey) => calls.get(stepId(task, stepKey)) ?? 0,
    async deploy(next) {
      if (next === null || typeof next !== 'object' || (next.root === undefined) === (next.routes === undefined)) {
        throw new TypeError(
          `t.deploy(app): give root (the app's directory) or routes, not ${next?.root === undefined ? 'neither' : 'both'}`,
        )
      }
      const loaded = next.routes ? { routes: next.routes, events: next.events } : await load(next.root!)
      await settle('t.deploy()')
      // As a deploy does: the old code's process stops, the new one picks up what the store holds.
      await runtime.close()
      runtime = launch({ routes: loaded.routes, events: next.events ?? loaded.events }, next.version)
      await runtime.recover()
      await fireUntil(clock.now(), 't.deploy()')
    },
    async close() {
      await runtime.close()
      if (getActiveTaskRuntime() === runtime || getActiveTaskRuntime() === undefined) setActiveTaskRuntime(previous ?? null)
    },
  }
  return t
}

/** What a run waits on, in a sentence of an error message. */
function describeWaiting(waiting: Waiting): string {
  switch (waiting.kind) {
    case 'token':
      return `step "${waiting.step}" waits on token ${waiting.tokenId}; complete it with t.completeToken(${JSON.stringify(waiting.tokenId)}, payload)`
    case 'event':
      return `step "${waiting.step}" waits on an event "${waiting.name}"${waiting.match ? ` matching ${JSON.stringify(waiting.match)}` : ''}; send it with t.sendEvent(${JSON.stringify(waiting.name)}, data)`
    case 'run':
      return `step "${waiting.step}" waits on run ${waiting.runId} of "${waiting.task}", which cannot finish either`
    default:
      return `it waits on ${waiting.kind}`
  }
}
