/**
 * The task runtime: registers the task routes of an app and runs them.
 * Edge-safe: the Node server, the edge and function targets and the CLI all
 * drive this same implementation. The runtimes a handler makes for itself
 * and the Cloudflare Durable Object's are `createCoreRuntime()`: their
 * stores are never shared, so their bundles leave the claims of shared work
 * out.
 */
import type { Logger, RuntimeApiRoute, TaskRuntime, TaskSummary, TriggerOptions } from '../types.ts'
import { getActiveTaskRuntime, setActiveTaskRuntime } from './client/active.ts'
import { defineTasks } from './definitions/definitions.ts'
import type { RuntimeShard } from '../types/shard.ts'
import { TaskEngine } from './engine/engine.ts'
import { checkEventSchemas, type EventSchemas } from '../events/schemas.ts'
import { SharedWorkClaims } from './engine/shared-work.ts'
import { resolveRetention } from './store/retention.ts'
import { limitsStarts } from './flow/flow.ts'
import { processEnv } from '../env.ts'
import { type CallbackSigner, callbackSigner } from './steps/callbacks.ts'
import { MemoryRunStore } from './store/memory-store.ts'
import { checkMaxPayloadBytes } from './store/payload-limit.ts'
import { signalStore } from './steps/signal-waits.ts'
import { describe } from '../describe.ts'
import { TaskScheduler } from './schedule/scheduler.ts'
import { listEventPage } from './store/event-list.ts'
import type { RunStore } from './store/store.ts'
import type { CronClock } from './definitions/cron-clock.ts'
import { type Clock, systemClock } from './base/clock.ts'
import type { StepCalls } from './steps/step-calls.ts'
import type { TaskEngineOptions } from './engine/engine-parts.ts'
import { type Telemetry, telemetryOptionProblem } from '../telemetry/types.ts'
import { resolveVersionPolicy, type VersionPolicy, versionProblem } from './definitions/versions.ts'

export interface TaskRuntimeOptions {
  /**
   * The app's API routes, each a manifest entry (or just `{ path, module }`)
   * plus its loaded module. Routes whose kind resolves to `task` are
   * registered; the others are ignored. A task's handler is its `POST(ctx)`
   * export and its schema its `input` export.
   */
  routes: readonly RuntimeApiRoute[]
  /**
   * Where runs, steps, timers and tokens are kept.
   * @default new MemoryRunStore({ maxRuns })
   */
  store?: RunStore
  /**
   * Receives the one-time note about in-process waits, retry warnings,
   * skipped cron ticks and every failure, always with the task name.
   * @default console
   */
  logger?: Logger
  /**
   * Bound of the default memory store. Ignored when `store` is given.
   * @default 10000
   */
  maxRuns?: number
  /**
   * The largest input, result, step output and token payload a run may
   * hold, in bytes of UTF-8 JSON, on every store. A trigger over it
   * (`POST /__tasks/<name>`, `enqueue`, `trigger`, `ctx.step.enqueue`,
   * `ctx.step.waitForTask`) and a token completion over it reject with
   * `PayloadTooLargeError` (413 `PAYLOAD_TOO_LARGE`); a result or step
   * output over it fails the attempt, and retries apply.
   * @default 1048576
   */
  maxPayloadBytes?: number
  /**
   * Most handlers this runtime runs at once. Runs past it (a batch of
   * 10,000 items, an event that starts many tasks' runs) wait their turn,
   * in the store as `running`, and start as handlers end: higher priority
   * first, then the one that waited longest. Note: a handler that waits
   * on another run in memory, rather than through `ctx.step.waitForTask`,
   * still holds its slot.
   * @default 100
   */
  maxConcurrentRuns?: number
  /**
   * Reads the schedules: checks each one in full at start, says when it
   * next fires, and fires it while `startScheduler()` runs. Without one, a
   * schedule is only checked for its five fields, `scheduledJobs()` has no
   * next tick and `startScheduler()` throws, which suits a platform that
   * fires the schedules itself and calls `runScheduled(cron)`.
   * @default cronerClock, from the `svcjs` entry; none from the edge targets' runtimes
   */
  cron?: CronClock
  /**
   * What the runtime reads the time from and sets its timers on: the runs'
   * stamps, sleeps, retries, delays, token and event timeouts, attempt
   * timeouts, flow control windows and retention. `svcjs/testing` gives a
   * virtual one.
   * @default the system clock
   */
  clock?: Clock
  /**
   * Environment variables, read for `SVC_DISABLE_IN_PROCESS_CRON`. Edge
   * targets pass their bindings here.
   * @default globalThis.process?.env, or {} where there is no `process`
   */
  env?: Record<string, string | undefined>
  /**
   * Unreference in-process timers (delays, backoff, sleeps, token timeouts,
   * cron ticks) where the platform supports it, so they never keep a Node
   * process alive. Leave it off for a CLI that must wait for a sleeping run.
   * Note: `close()` clears every timer either way.
   * @default false
   */
  unrefTimers?: boolean
  /**
   * The app's event schemas, event name → Standard Schema (the `events`
   * export of `src/events.ts`): `sendEvent` and `POST /__events` check the
   * data of each event whose name has one (docs/events.md "Typed events").
   * @default none: event data is checked against no schema
   */
  events?: EventSchemas
  /**
   * Where spans, metrics and log records go (docs/observability.md), such
   * as `otelTelemetry(api)` on the OpenTelemetry API; the Node server loads
   * that itself when `@opentelemetry/api` is installed.
   * @default none: nothing is traced or measured
   */
  telemetry?: Telemetry
  /**
   * Print each entry a run logs with `ctx.log` to `logger`, with its task
   * and run id.
   * @default true when `NODE_ENV` is `development` (`svc dev`), else false
   */
  printRunLogs?: boolean
  /**
   * The version of the app's code that every task here records on its
   * runs, in place of each route's own `version` (docs/deploying.md "Runs across deploys").
   * @default env.SVC_VERSION, else each route's `version`
   */
  version?: string
  /**
   * What happens to a run whose version no live process serves any more,
   * when a process of another version finds it due: `'migrate'` moves it
   * to the newest live version, recorded in `RunRecord.migrations`, and
   * runs it there; `'fail'` fails it with a `RunVersionError`.
   * @default env.SVC_VERSION_POLICY, else 'migrate'
   */
  versionPolicy?: VersionPolicy
  /**
   * How long finished runs are kept, in seconds from when they finished,
   * for the tasks that set no `route.retention`; `false` keeps them
   * within the store's `maxRuns` only (docs/stores.md "Retention").
   * @default env.SVC_RETENTION (seconds, or `off`), else 604800 (7 days) on a durable store and false on the memory store
   */
  retention?: number | false
  /**
   * For one of several runtimes that split an app's runs between them (the
   * tasks Durable Objects of a worker with `shards`, docs/deploying.md).
   * @default none: this runtime holds every run
   */
  shard?: RuntimeShard
}

/** What svc's own hosts give a runtime besides its options: `svcjs/testing`'s step mocks and ids in sequence. */
export interface InnerOptions {
  callStep?: StepCalls
  ids?: TaskEngineOptions['ids']
  /** Makes callback URLs: `svcjs/testing` counts its signing as the engine's activity. @default callbackSigner(env) */
  callbacks?: CallbackSigner
}

/**
 * What `createTaskRuntime()` returns.
 * @deprecated Use `TaskRuntime`, which now has every member.
 */
export type TaskRuntimeInstance = TaskRuntime

/**
 * The runtime `createTaskRuntime` makes (public-runtime.ts), before it
 * supplies the default clock: with the claims of shared work, and with the
 * cron clock only when `options.cron` gives one.
 */
export function createSharedRuntime(options: TaskRuntimeOptions): TaskRuntime {
  return createCoreRuntime(withMemoryStore(options), SharedWorkClaims)
}

/**
 * `options` with the default store, in memory, when they give none. Only
 * the hosts that make a runtime in memory call it, so that a Durable
 * Object's bundle, whose store is always its own, leaves the memory store
 * out.
 */
export function withMemoryStore(options: TaskRuntimeOptions): TaskRuntimeOptions {
  if (options === null || typeof options !== 'object' || options.store !== undefined) return options
  return { ...options, store: new MemoryRunStore({ maxRuns: options.maxRuns, clock: options.clock }) }
}

/**
 * The runtime over `options.store`, which the caller gives (`withMemoryStore`
 * gives the default), with the claims of shared work only when given
 * `sharedWork`: without them, a store several processes share is refused.
 */
export function createCoreRuntime(
  options: TaskRuntimeOptions,
  sharedWork?: typeof SharedWorkClaims,
  inner: InnerOptions = {},
): TaskRuntime {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`createTaskRuntime(options): options must be an object with routes (got ${describe(options)})`)
  }
  const logger = options.logger ?? console
  const env = options.env ?? processEnv()
  const unref = options.unrefTimers ?? false
  if (typeof unref !== 'boolean') {
    throw new TypeError(`createTaskRuntime(): unrefTimers must be a boolean (got ${describe(unref)})`)
  }
  const maxPayloadBytes = checkMaxPayloadBytes(options.maxPayloadBytes, 'createTaskRuntime()')
  const { maxConcurrentRuns } = options
  if (maxConcurrentRuns !== undefined && !(Number.isInteger(maxConcurrentRuns) && maxConcurrentRuns > 0)) {
    throw new RangeError(
      `createTaskRuntime(): maxConcurrentRuns must be a positive whole number of runs (got ${describe(maxConcurrentRuns)})`,
    )
  }
  const store = options.store
  // An internal caller's mistake: every public entry gives a store (withMemoryStore).
  if (store === undefined) throw new TypeError('createCoreRuntime(): options.store is required; withMemoryStore(options) gives the default')
  const cron = options.cron
  if (cron !== undefined && (cron === null || typeof cron.start !== 'function')) {
    throw new TypeError(`createTaskRuntime(): cron must be a cron clock such as cronerClock (got ${describe(cron)})`)
  }
  const clock = options.clock ?? systemClock
  if (
    clock === null ||
    typeof clock !== 'object' ||
    typeof clock.now !== 'function' ||
    typeof clock.setTimer !== 'function' ||
    typeof clock.clearTimer !== 'function'
  ) {
    throw new TypeError(`createTaskRuntime(): clock must be a clock with now(), setTimer() and clearTimer() (got ${describe(clock)})`)
  }
  const version = options.version ?? (env.SVC_VERSION || undefined)
  const badVersion = version === undefined ? null : versionProblem(version)
  if (badVersion) throw new TypeError(`createTaskRuntime(): ${options.version === undefined ? 'SVC_VERSION' : 'version'}: ${badVersion}`)
  const versionPolicy = resolveVersionPolicy(options.versionPolicy, env)
  const tasks = defineTasks(options.routes, cron, version)
  checkEventSchemas(options.events, 'createTaskRuntime()')
  const telemetry = options.telemetry
  const telemetryProblem = telemetryOptionProblem(telemetry)
  if (telemetryProblem) throw new TypeError(`createTaskRuntime(): ${telemetryProblem}`)
  const printRunLogs = options.printRunLogs ?? env.NODE_ENV === 'development'
  if (typeof printRunLogs !== 'boolean') {
    throw new TypeError(`createTaskRuntime(): printRunLogs must be a boolean (got ${describe(printRunLogs)})`)
  }
  const shard = options.shard
  const retentionMs = resolveRetention(options.retention, env, (store as RunStore).durable === true)
  const engine = new TaskEngine({
    store,
    cron,
    tasks,
    logger,
    unrefTimers: unref,
    clock,
    callStep: inner.callStep,
    callbacks: inner.callbacks ?? callbackSigner(env),
    ids: inner.ids,
    maxPayloadBytes,
    maxConcurrentRuns,
    sharedWork,
    eventSchemas: options.events,
    telemetry,
    printRunLogs,
    versionPolicy,
    retentionMs,
    shard,
  })
  const unobserve = telemetry?.observeRuns((status) => store.countRunsByTask(status))
  const scheduler = new TaskScheduler({
    tasks,
    logger,
    clock: cron,
    time: clock,
    unref,
    // A shard among several fires only the schedules it owns, however it is asked to.
    fire: (name, tick) => (shard && !shard.firesSchedule(tasks.get(name)!) ? Promise.resolve(undefined) : engine.fireScheduled(name, tick)),
  })

  const runtime: TaskRuntime = {
    tasks,
    store,
    maxPayloadBytes,
    trigger: (name: string, payload?: unknown, opts?: TriggerOptions) => engine.trigger(name, payload, opts),
    triggerMany: (name: string, payloads: readonly unknown[], opts?: TriggerOptions) => engine.triggerMany(name, payloads, opts),
    getRun: (id) => store.getRun(id),
    waitForRun: (id) => engine.waitForRun(id),
    completeToken: (tokenId, payload) => engine.completeToken(tokenId, payload),
    sendSignal: (runId, name, data, options) => engine.sendSignal(runId, name, data, options),
    listSignals: (runId) => signalStore(store, `listSignals(${describe(runId)})`).listSignals(runId),
    updateRun: (runId, name, data, options) => engine.updateRun(runId, name, data, options) as Promise<never>,
    listUpdates: async (runId) => {
      if (!store.listUpdates) throw new Error(`listUpdates(${describe(runId)}): this run store keeps no updates (it lacks listUpdates)`)
      return store.listUpdates(runId)
    },
    sendEvent: async (name, data, options) => {
      const call = `sendEvent(${describe(name)})`
      if (options !== undefined && (options === null || typeof options !== 'object')) {
        throw new TypeError(`${call}: options must be an object such as { id } (got ${describe(options)})`)
      }
      const [sent] = await engine.sendEvents([{ name, data, id: options?.id }], call)
      return sent
    },
    sendEvents: (events) => engine.sendEvents(events, 'sendEvents()'),
    listEvents: (query) => listEventPage(store, query),
    listRuns: (query) => store.listRuns(query),
    cancel: (id, options) => engine.cancel(id, options),
    replay: (id, options) => engine.replay(id, options),
    wake: (id) => engine.wake(id),
    // Asked for by name, not by a tick: fired here even on a shard that does not fire the schedule (the worker picks the shard).
    fireSchedule: (name) => engine.fireSchedule(name),
    schedules: engine.schedules,
    onRunChange: (listener, onEnd) => engine.onRunChange(listener, onEnd),

    async listTasks(): Promise<TaskSummary[]> {
      // Runs queue only behind a limit; the dashboard asks on every run
      // change, so queues are counted, never read.
      const counted = [...tasks.values()].some((def) => limitsStarts(def.flow)) ? store.countRunsByTask('queued') : []
      const queuedBy = new Map((await counted).map(({ taskName, count }) => [taskName, count]))
      return Promise.all(
        [...tasks.values()].map(async (def) => {
          const [last] = await store.listRuns({ taskName: def.name, limit: 1 })
          const { concurrency, rateLimit, debounce } = def.flow
          return {
            name: def.name,
            path: def.path,
            schedule: def.schedule,
            events: [...def.on],
            retries: def.retries,
            timeout: def.timeout,
            concurrency: concurrency
              ? {
                  limit: concurrency.limit,
                  key: concurrency.key ?? null,
                  ...(concurrency.perKey === undefined ? {} : { perKey: concurrency.perKey }),
                }
              : null,
            rateLimit: rateLimit ? { limit: rateLimit.limit, periodSeconds: rateLimit.periodSeconds, key: rateLimit.key ?? null } : null,
            debounce: debounce ? { seconds: debounce.seconds, key: debounce.key ?? null } : null,
            queued: limitsStarts(def.flow) ? (queuedBy.get(def.name) ?? 0) : 0,
            lastRun: last ? { id: last.id, status: last.status, finishedAt: last.finishedAt ?? null } : null,
          }
        }),
      )
    },

    runScheduled: (cron, timezone) => scheduler.runScheduled(cron, timezone),
    startScheduler: () => scheduler.start(env),
    stopScheduler: () => scheduler.stop(),
    scheduledJobs: () => scheduler.list(),
    recover: () => engine.recover(),
    drain: (timeoutMs) => engine.drain(timeoutMs),
    sweep: (options) => engine.sweep(options),

    async close(): Promise<void> {
      scheduler.stop()
      unobserve?.()
      await engine.close()
      if (getActiveTaskRuntime() === runtime) setActiveTaskRuntime(null)
    },
  }
  return runtime
}
