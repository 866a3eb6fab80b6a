/**
 * How a worker finds the tasks Durable Object: the binding it is declared
 * under in wrangler.json, and the one named instance every isolate reaches.
 *
 * One instance holds every run. Idempotency keys, each task's `lastRun`, the
 * token of a `waitForToken` and the runs a parent waits for are then read
 * and written in one place, in order, with no router between shards. The
 * cost is one object's throughput: every admin call, enqueue and attempt of
 * the app shares one isolate's CPU (Cloudflare's limits for one Durable
 * Object apply), which suits background work far below that.
 */
import type { StubLike } from './rpc.ts'

/** The binding name of the tasks object in wrangler.json's `durable_objects.bindings`. */
export const TASKS_BINDING = 'SVC_TASKS'

/** The class the generated worker exports; `new_sqlite_classes` names it in a migration. */
export const TASKS_CLASS = 'SvcTasks'

/** The name of the one instance. */
export const TASKS_OBJECT_NAME = 'svc-tasks'

/** The parts of a `DurableObjectNamespace` the worker uses. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown
  get(id: unknown): StubLike
}

/** The tasks object's namespace in a worker's `env`, when it is bound. */
export function tasksNamespace(env: unknown): DurableObjectNamespaceLike | undefined {
  const ns = (env as Record<string, unknown> | null | undefined)?.[TASKS_BINDING] as DurableObjectNamespaceLike | undefined
  return typeof ns?.idFromName === 'function' && typeof ns.get === 'function' ? ns : undefined
}

/** A stub of the one instance; call it per request, as a stub belongs to the request that made it. */
export function tasksStub(ns: DurableObjectNamespaceLike): StubLike {
  return ns.get(ns.idFromName(TASKS_OBJECT_NAME))
}

/** What a hand-written entry must add when the binding is missing, for the one warning the worker logs. */
export const MISSING_BINDING_WARNING =
  `[svc] no ${TASKS_BINDING} Durable Object binding: task runs, timers and tokens are kept in this isolate's memory and are lost when it is evicted. ` +
  `Export the class (export const ${TASKS_CLASS} = createTasksObject(app), from 'svc/cloudflare') and bind it in wrangler.json: ` +
  `"durable_objects": { "bindings": [{ "name": "${TASKS_BINDING}", "class_name": "${TASKS_CLASS}" }] }, ` +
  `"migrations": [{ "tag": "v1", "new_sqlite_classes": ["${TASKS_CLASS}"] }]`
