/**
 * `svcjs/cloudflare`: runs an app as a module worker. `fetch` serves the core
 * handler; `scheduled` fires the cron tasks of `controller.cron`. Task runs
 * live in the `SvcTasks` Durable Object (`createTasksObject`) when the worker
 * binds it as `SVC_TASKS`, and in the isolate's memory otherwise; with
 * `shards`, in that many instances of it.
 */
import { checkShards, MISSING_BINDING_WARNING, tasksNamespace, tasksStub } from '#svc/cloudflare/binding.ts'
import { createObjectRuntime, type ObjectTaskRuntime } from '#svc/cloudflare/object-runtime.ts'
import { fireCron } from '#svc/runtime/cron.ts'
import { stringBindings } from '#svc/runtime/env.ts'
import { createCoreHandler, type SvcHandler, type SvcHandlerOptions } from '#svc/runtime/handler.ts'
import { setActiveTaskRuntime } from '#svc/runtime/tasks/active.ts'

export { createTasksObject } from '#svc/cloudflare/tasks-object.ts'
export type { TasksObjectApp, TasksObjectClass, TasksObjectOptions, DurableObjectStateLike } from '#svc/cloudflare/tasks-object.ts'
export { DurableObjectRunStore } from '#svc/cloudflare/sql-store.ts'
export type { DurableObjectRunStoreOptions } from '#svc/cloudflare/sql-store.ts'
export { MAX_SHARDS, TASKS_BINDING, TASKS_CLASS } from '#svc/cloudflare/binding.ts'

/** The parts of the Workers `ExecutionContext` the shim uses. */
export interface ExecutionContextLike {
  waitUntil(promise: Promise<unknown>): void
}

/** The parts of the Workers `ScheduledController` the shim uses. */
export interface ScheduledControllerLike {
  cron: string
  scheduledTime?: number
}

export type WorkerApp = Omit<SvcHandlerOptions, 'env'>

export interface WorkerOptions {
  /**
   * Over how many `SvcTasks` objects task runs spread (docs/deploying.md
   * "More than one tasks object"). Give the tasks object the same number
   * (`createTasksObject(app, { shards })`). It may grow from one deploy to
   * the next, never shrink: an object called with fewer than it has seen
   * answers `SHARDS_REDUCED`.
   * @default 1
   */
  shards?: number
}

export interface SvcWorker {
  fetch(request: Request, env: unknown, ctx: ExecutionContextLike): Promise<Response>
  scheduled(controller: ScheduledControllerLike, env: unknown, ctx: ExecutionContextLike): Promise<void>
}

/**
 * Bindings arrive with each event, so the handler is built on the first one.
 * With the `SVC_TASKS` binding, the task admin surface, `enqueue()`,
 * `completeToken()` and cron all reach the tasks object. Without it, runs
 * live in the isolate's memory, `waitUntil` keeps a run started by a request
 * alive until it ends, and one warning says what to add.
 */
export function createWorker(app: WorkerApp, options: WorkerOptions = {}): SvcWorker {
  const shards = checkShards(options.shards, 'createWorker(app, { shards })')
  let handler: SvcHandler | undefined
  let objectRuntime: ObjectTaskRuntime | undefined
  const get = (env: unknown): SvcHandler => {
    if (handler) return handler
    const bindings = stringBindings(env)
    const ns = tasksNamespace(env)
    if (ns) {
      objectRuntime = createObjectRuntime(app.routes, (shard) => tasksStub(ns, shard), shards)
      // The run lives in the object, not under this request's waitUntil.
      handler = createCoreHandler({ ...app, env: bindings, runtime: objectRuntime, holdRuns: false })
    } else {
      handler = createCoreHandler({ ...app, env: bindings })
      if (handler.runtime.tasks.size > 0) (app.logger ?? console).warn(MISSING_BINDING_WARNING)
    }
    setActiveTaskRuntime(handler.runtime)
    return handler
  }
  return {
    fetch(request, env, ctx) {
      return get(env).fetch(request, { waitUntil: (promise) => ctx.waitUntil(promise) })
    },
    // Rejects when a fired run failed, so the event's outcome is `exception`.
    async scheduled(controller, env, ctx) {
      const runtime = get(env).runtime
      const done = objectRuntime ? objectRuntime.fireCron(controller.cron) : fireCron(runtime, controller.cron)
      // The returned promise carries the failure; the copy held open by waitUntil would report it twice.
      ctx.waitUntil(done.catch(() => {}))
      await done
    },
  }
}
