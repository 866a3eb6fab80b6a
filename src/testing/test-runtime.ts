/**
 * `createTestRuntime()`: an app's tasks in a unit test, with no server and
 * no network. Runs are kept by the memory store (or the store given) and
 * timed by a virtual clock the test moves (`advance`), so a day's sleep, a
 * retry's backoff, a token's timeout or a week of cron ticks take
 * milliseconds. The engine is the production one: runs are validated,
 * recorded, replayed and retried exactly as under `svc dev`. The API is in
 * types.ts; moving the clock is drive.ts.
 */
import { describe } from '../runtime/describe.ts'
import { getActiveTaskRuntime, setActiveTaskRuntime } from '../runtime/tasks/client/active.ts'
import { createCoreRuntime } from '../runtime/tasks/runtime.ts'
import { clockedCron } from '../runtime/tasks/schedule/clocked-cron.ts'
import { cronerClock } from '../runtime/tasks/schedule/croner-clock.ts'
import { MemoryRunStore } from '../runtime/tasks/store/memory-store.ts'
import type { RunStore } from '../runtime/tasks/store/store.ts'
import { isFinished } from '../runtime/tasks/store/store.ts'
import { SharedWorkClaims } from '../runtime/tasks/engine/shared-work.ts'
import type { StepCall } from '../runtime/tasks/steps/step-calls.ts'
import type { Logger, TaskRuntime, TriggerOptions, UpdateRunOptions } from '../types.ts'
import { durationMs } from './duration.ts'
import { sequentialIds } from './ids.ts'
import { Activity } from './settle.ts'
import { VirtualClock } from './virtual-clock.ts'
import { describeWaiting, waitingOf } from './waiting.ts'
import { ClockDriver } from './drive.ts'
import { callbackSigner } from '../runtime/tasks/steps/callbacks.ts'
import {
  DEFAULT_START,
  type LoadedApp,
  type StepMock,
  type StepMockCall,
  type TestRun,
  type TestRuntime,
  type TestRuntimeOptions,
} from './types.ts'

/**
 * A test's environment: callback URLs name `http://localhost:3000` and are
 * signed, as run tokens are, with a secret of this process's.
 */
const TEST_ENV = { NODE_ENV: 'test' }

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
        env: TEST_ENV,
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
      { callStep: (step, call) => callStep(step, call), ids, callbacks: activity.watchCalls(callbackSigner(TEST_ENV)) },
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

  const driver = new ClockDriver({ clock, activity, store, settleMs, runtime: () => runtime })
  const { settle } = driver
  const fireUntil = (until: number, where: string, maxTimers?: number) => driver.fireUntil(until, where, maxTimers)
  const advanceUntilIdle = (where: string, maxTimers?: number) => driver.advanceUntilIdle(where, maxTimers)

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
      if (isFinished(run.status)) return run as TestRun<never>
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
    async sendSignal(runId, name, data, opts) {
      const sent = await runtime.sendSignal(runId, name, data, opts)
      await fireUntil(clock.now(), 't.sendSignal()')
      return sent
    },
    async updateRun<Result>(runId: string, name: string, data?: unknown, opts?: UpdateRunOptions) {
      const where = `t.updateRun(${describe(runId)}, ${describe(name)})`
      let answered = false
      const answer = runtime.updateRun<Result>(runId, name, data, opts).finally(() => {
        answered = true
      })
      answer.catch(() => {})
      await fireUntil(clock.now(), where)
      // The answer is written as the run goes on; what is left is its caller reading it, in real time.
      for (const until = Date.now() + settleMs; !answered && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 1))
      if (!answered) {
        const waiting = await t.waitingOn(runId)
        const run = await runtime.getRun(runId)
        const what = waiting ? describeWaiting(waiting) : `it is ${run?.status ?? 'gone'}`
        throw new Error(`${where}: run ${runId} did not answer without the clock moving (${what}); move the clock with t.advance() first`)
      }
      return answer
    },
    async cancel(runId, opts) {
      const run = await runtime.cancel(runId, opts)
      await fireUntil(clock.now(), 't.cancel()')
      return run
    },
    async replay(runId, opts) {
      const run = await runtime.replay(runId, opts)
      await fireUntil(clock.now(), 't.replay()')
      return record(run.id)
    },
    getRun: (runId) => runtime.getRun(runId),
    runs: ({ task, ...query } = {}) => runtime.listRuns({ ...query, taskName: task }),
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
