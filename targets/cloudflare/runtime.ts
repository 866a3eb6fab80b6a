/**
 * `svcjs/cloudflare`: runs an app as a module worker. `fetch` serves the core
 * handler; `scheduled` fires the cron tasks of `controller.cron`. Task runs
 * live in the `SvcTasks` Durable Object (`createTasksObject`) when the worker
 * binds it as `SVC_TASKS`, and in the isolate's memory otherwise; with
 * `shards`, in that many instances of it.
 */
import {
  checkShards,
  type DurableObjectNamespaceLike,
  MISSING_BINDING_ERROR,
  MISSING_BINDING_WARNING,
  tasksNamespace,
  tasksStub,
} from '#svc/cloudflare/binding.ts'
import type { ObjectsPart } from '#svc/cloudflare/object-runtime.ts'
import { SHARDED_OBJECTS } from '#svc/cloudflare/sharded-runtime.ts'
import { fireCron } from '#svc/runtime/cron.ts'
import { stringBindings } from '#svc/runtime/env.ts'
import { type CoreHandler, createCoreHandler, type SvcHandlerOptions } from '#svc/runtime/handler.ts'
import { TASK_SURFACE, taskSurface } from '#svc/runtime/task-surface.ts'
import { PAGES, type PagesPart } from '#svc/runtime/pages/part.ts'
import { setActiveTaskRuntime } from '#svc/runtime/tasks/client/active.ts'

export { composeTasksObject, createTasksObject } from '#svc/cloudflare/tasks-object.ts'
export { ONE_OBJECT, type ObjectsPart } from '#svc/cloudflare/object-runtime.ts'
export { SHARDED_OBJECTS } from '#svc/cloudflare/sharded-runtime.ts'
export type { TasksObjectApp, TasksObjectClass, TasksObjectOptions, DurableObjectStateLike } from '#svc/cloudflare/tasks-object.ts'
export { DurableObjectRunStore } from '#svc/cloudflare/sql-store.ts'
export type { DurableObjectRunStoreOptions } from '#svc/cloudflare/sql-store.ts'
export { MAX_SHARDS, TASKS_BINDING, TASKS_CLASS } from '#svc/cloudflare/binding.ts'
export { PAGES } from '#svc/runtime/pages/part.ts'
export type { PagesPart } from '#svc/runtime/pages/part.ts'

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

/** The parts of svc a worker carries; `svc build` gives only those the app uses. */
export interface WorkerParts {
  /** Task runs: in the tasks Durable Object when the worker binds it, else in the isolate's memory (`WORKER_TASKS`); only in the objects (`objectTasks(ONE_OBJECT)`, as `svc build` writes it). */
  tasks?: WorkerTasksPart
  /** Server and hybrid pages, their ISR cache and the revalidate endpoint (`PAGES`). */
  pages?: PagesPart
}

/** Makes a worker's handler with its task side, from the bindings of its first event. */
export type WorkerTasksPart = (app: WorkerApp, env: unknown, shards: number, pages: PagesPart | undefined) => ServedWorker

interface ServedWorker {
  handler: CoreHandler
  /** Fires the tasks of a schedule, for an app that has them. */
  cron?: (expression: string) => Promise<unknown>
}

/**
 * With the `SVC_TASKS` binding, the task admin surface, `enqueue()`,
 * `completeToken()` and cron all reach the tasks object. Without it, runs
 * live in the isolate's memory, `waitUntil` keeps a run started by a request
 * alive until it ends, and one warning says what to add.
 */
export const WORKER_TASKS: WorkerTasksPart = (app, env, shards, pages) => {
  const ns = tasksNamespace(env)
  if (ns) return servedByObjects(app, env, ns, SHARDED_OBJECTS, shards, pages)
  const handler = createCoreHandler({ ...app, env: stringBindings(env) }, { tasks: TASK_SURFACE, pages })
  const runtime = handler.runtime!
  if (runtime.tasks.size > 0) (app.logger ?? console).warn(MISSING_BINDING_WARNING)
  setActiveTaskRuntime(runtime)
  return { handler, cron: (expression) => fireCron(runtime, expression) }
}

/**
 * The task part of a worker whose runs live only in the tasks objects,
 * reached through `objects` (`ONE_OBJECT`, or `SHARDED_OBJECTS` for
 * `shards`), as `svc build` writes it: it carries no engine or store of its
 * own, and without the `SVC_TASKS` binding its first event is refused,
 * naming the wrangler.json entry to add.
 */
export function objectTasks(objects: ObjectsPart): WorkerTasksPart {
  return (app, env, shards, pages) => {
    const ns = tasksNamespace(env)
    if (!ns) throw new TypeError(MISSING_BINDING_ERROR)
    return servedByObjects(app, env, ns, objects, shards, pages)
  }
}

/** The worker's handler over its tasks objects: the run lives in the object, not under a request's waitUntil. */
function servedByObjects(
  app: WorkerApp,
  env: unknown,
  ns: DurableObjectNamespaceLike,
  objects: ObjectsPart,
  shards: number,
  pages: PagesPart | undefined,
): ServedWorker {
  const runtime = objects(app.routes, (shard) => tasksStub(ns, shard), shards)
  const handler = createCoreHandler({ ...app, env: stringBindings(env), runtime, holdRuns: false }, { tasks: taskSurface(), pages })
  setActiveTaskRuntime(runtime)
  return { handler, cron: (expression) => runtime.fireCron(expression) }
}

/**
 * The worker of an app, with every part of svc: task runs (in the tasks
 * Durable Object when the worker binds it as `SVC_TASKS`) and pages. Bindings
 * arrive with each event, so the handler is built on the first one.
 */
export function createWorker(app: WorkerApp, options: WorkerOptions = {}): SvcWorker {
  return composeWorker(app, { tasks: WORKER_TASKS, pages: PAGES }, options)
}

/**
 * `createWorker` with only the `parts` given, which is what `svc build`
 * writes: a worker of routes carries no task engine, admin surface or Durable
 * Object store, and answers the task paths with 404 `NO_TASKS`. Routes that
 * are tasks without `parts.tasks`, or pages without `parts.pages`, are
 * refused at the first event, naming the fix.
 */
export function composeWorker(app: WorkerApp, parts: WorkerParts, options: WorkerOptions = {}): SvcWorker {
  const shards = checkShards(options.shards, 'createWorker(app, { shards })')
  let served: ServedWorker | undefined
  const get = (env: unknown): ServedWorker => {
    try {
      served ??= parts.tasks
        ? parts.tasks(app, env, shards, parts.pages)
        : { handler: createCoreHandler({ ...app, env: stringBindings(env) }, { pages: parts.pages }) }
    } catch (error) {
      // The event fails as the platform fails any (error 1101); the log says why, for `wrangler tail`.
      ;(app.logger ?? console).error(error instanceof Error ? error.message : error)
      throw error
    }
    return served
  }
  return {
    fetch(request, env, ctx) {
      return get(env).handler.fetch(request, { waitUntil: (promise) => ctx.waitUntil(promise) })
    },
    // Rejects when a fired run failed, so the event's outcome is `exception`.
    async scheduled(controller, env, ctx) {
      const { cron } = get(env)
      // An app without tasks has no schedules: wrangler.json lists no cron trigger for it.
      if (!cron) return
      const done = cron(controller.cron)
      // The returned promise carries the failure; the copy held open by waitUntil would report it twice.
      ctx.waitUntil(done.catch(() => {}))
      await done
    },
  }
}
