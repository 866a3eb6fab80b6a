/**
 * The task runtime's life inside a server (docs/server.md "startSvcServer"): it is
 * the active runtime of the process (so `enqueue()` dispatches in-process),
 * recovers what a durable store holds, runs the in-process scheduler unless
 * `SVC_DISABLE_IN_PROCESS_CRON` is set, drains on shutdown and is closed
 * only when the server created it, with the store when the server opened it.
 */
import type { Telemetry } from '../runtime/telemetry/types.ts'
import { isEnabled } from '../runtime/env.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'
import { createTaskRuntime, getActiveTaskRuntime, setActiveTaskRuntime } from '../runtime/tasks/index.ts'
import { DISABLE_CRON_ENV } from '../runtime/tasks/schedule/scheduler.ts'
import type { Logger, RuntimeApiRoute, TaskRuntime } from '../types.ts'

export interface RuntimeLifecycleOptions {
  /** A runtime the caller owns; the server then never closes or replaces it. */
  runtime?: TaskRuntime
  /**
   * What a runtime the server creates is built from; `closeStore` closes a
   * store the server opened itself (from `SVC_STORE_URL`), after the runtime.
   */
  create: {
    routes: RuntimeApiRoute[]
    events?: EventSchemas
    store?: TaskRuntime['store']
    closeStore?: () => Promise<void>
    maxPayloadBytes?: number
    maxConcurrentRuns?: number
    telemetry?: Telemetry
    /** Print each entry a run logs (`ctx.log`), as a development server does. */
    printRunLogs?: boolean
  }
  env: Record<string, string | undefined>
  logger: Logger
  /** Keeps work alive until shutdown (the drain of a replaced runtime). */
  waitUntil: (promise: Promise<unknown>) => void
  /** How long a replaced runtime's attempts may take to finish. */
  drainTimeoutMs: number
}

export interface RuntimeLifecycle {
  /** The runtime serving now; none on a server built for an app without tasks (no-tasks.ts). */
  readonly runtime: TaskRuntime | undefined
  /** Makes it the active runtime (unless the caller's runtime finds another active), recovers, starts the scheduler. */
  start(): Promise<void>
  /**
   * A runtime for new task routes: one over the same run store when the
   * server created the current one, else the caller's own, unchanged (its
   * tasks are theirs to change). Nothing runs until `adopt()`.
   */
  successor(routes: RuntimeApiRoute[], events?: EventSchemas): TaskRuntime | undefined
  /**
   * Serves `next` from now on. Attempts in flight finish on the old runtime;
   * both share the store, so `next` then re-arms the waits the old one held.
   */
  adopt(next: TaskRuntime | undefined): void
  stopScheduler(): void
  /** Waits for attempts in flight, at most `timeoutMs`. */
  drain(timeoutMs: number): Promise<void>
  /** No longer the active runtime; closed if the server created it. */
  close(): Promise<void>
}

export function createRuntimeLifecycle(options: RuntimeLifecycleOptions): RuntimeLifecycle {
  const { env, logger } = options
  const owned = options.runtime === undefined
  const { maxPayloadBytes, maxConcurrentRuns, telemetry, printRunLogs } = options.create
  const build = (routes: RuntimeApiRoute[], events: EventSchemas | undefined, store: TaskRuntime['store'] | undefined) =>
    createTaskRuntime({ routes, events, store, env, logger, maxPayloadBytes, maxConcurrentRuns, telemetry, printRunLogs })
  let runtime: TaskRuntime = options.runtime ?? build(options.create.routes, options.create.events, options.create.store)
  const cronDisabled = isEnabled(env[DISABLE_CRON_ENV])

  return {
    get runtime() {
      return runtime
    },
    async start() {
      if (owned || getActiveTaskRuntime() === undefined) setActiveTaskRuntime(runtime)
      await runtime.recover()
      if (cronDisabled) {
        logger.info(`[svc] in-process cron is off (${DISABLE_CRON_ENV}); an external scheduler must fire scheduled tasks`)
      } else {
        runtime.startScheduler()
      }
    },
    successor(routes, events) {
      return owned ? build(routes, events, runtime.store) : runtime
    },
    adopt(next) {
      if (next === undefined || next === runtime) return
      const old = runtime
      runtime = next
      old.stopScheduler()
      if (getActiveTaskRuntime() === old) setActiveTaskRuntime(next)
      if (!cronDisabled) next.startScheduler()
      options.waitUntil(
        old
          .drain(options.drainTimeoutMs)
          .then(() => old.close())
          .then(() => next.recover()),
      )
    },
    stopScheduler() {
      runtime.stopScheduler()
    },
    drain(timeoutMs) {
      return runtime.drain(timeoutMs).catch((error) => logger.error('[svc] task drain failed:', error))
    },
    async close() {
      if (getActiveTaskRuntime() === runtime) setActiveTaskRuntime(null)
      if (!owned) return
      await runtime.close()
      await options.create.closeStore?.()
    },
  }
}
