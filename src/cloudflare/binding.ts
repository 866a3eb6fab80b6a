/**
 * How a worker finds the tasks Durable Objects: the binding they are
 * declared under in wrangler.json, and the named instances every isolate
 * reaches.
 *
 * By default one instance holds every run. Idempotency keys, each task's
 * `lastRun`, the token of a `waitForToken` and the runs a parent waits for
 * are then read and written in one place, in order. The cost is one
 * object's throughput: every admin call, enqueue and attempt of the app
 * shares one isolate's CPU (Cloudflare's limits for one Durable Object
 * apply). With `shards` above 1, runs spread over that many instances
 * (`sharded-runtime.ts`); shard 0 keeps the one instance's name, so the
 * runs it held before stay where the worker looks.
 */
import { describe } from '../runtime/describe.ts'
import type { StubLike } from './rpc.ts'

/** The binding name of the tasks object in wrangler.json's `durable_objects.bindings`. */
export const TASKS_BINDING = 'SVC_TASKS'

/** The class the generated worker exports; `new_sqlite_classes` names it in a migration. */
export const TASKS_CLASS = 'SvcTasks'

/** The name of the one instance, and of shard 0 when runs are spread over several. */
export const TASKS_OBJECT_NAME = 'svc-tasks'

/** The most tasks objects an app's runs may spread over: a listing asks each of them. */
export const MAX_SHARDS = 64

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

/** A stub of the one instance, or of shard `shard`; call it per request, as a stub belongs to the request that made it. */
export function tasksStub(ns: DurableObjectNamespaceLike, shard = 0): StubLike {
  return ns.get(ns.idFromName(shardObjectName(shard)))
}

/** The instance name of shard `shard`: `svc-tasks` for shard 0, `svc-tasks-<n>` for the others. */
export function shardObjectName(shard: number): string {
  return shard === 0 ? TASKS_OBJECT_NAME : `${TASKS_OBJECT_NAME}-${shard}`
}

/**
 * The shard of the instance named `name` (`shardObjectName` read back). Its
 * runs' ids carry it, so it must be right: a name that is none of the
 * shards' is an error, not shard 0.
 */
export function shardIndexOf(name: string | undefined): number {
  for (let shard = 0; shard < MAX_SHARDS; shard++) if (shardObjectName(shard) === name) return shard
  throw new TypeError(
    `${TASKS_CLASS}: with shards, each tasks object is reached by its name (${shardObjectName(0)}, ${shardObjectName(1)}, …) and reads it from ctx.id.name; this one has ${name === undefined ? 'no name (an id not made by idFromName)' : `the name ${describe(name)}`}`,
  )
}

/** `shards` checked: a whole number from 1 to `MAX_SHARDS`; `where` names the option in the error. */
export function checkShards(shards: unknown, where: string): number {
  if (shards === undefined) return 1
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new RangeError(`${where} must be a whole number from 1 to ${MAX_SHARDS} (got ${describe(shards)})`)
  }
  return shards
}

/** What wrangler.json declares for the tasks object, as `svc build` writes it. */
const BINDING_CONFIG =
  `"durable_objects": { "bindings": [{ "name": "${TASKS_BINDING}", "class_name": "${TASKS_CLASS}" }] }, ` +
  `"migrations": [{ "tag": "v1", "new_sqlite_classes": ["${TASKS_CLASS}"] }]`

/** What a hand-written entry must add when the binding is missing, for the one warning the worker logs. */
export const MISSING_BINDING_WARNING =
  `[svc] no ${TASKS_BINDING} Durable Object binding: task runs, timers and tokens are kept in this isolate's memory and are lost when it is evicted. ` +
  `Export the class (export const ${TASKS_CLASS} = createTasksObject(app), from 'svcjs/cloudflare') and bind it in wrangler.json: ${BINDING_CONFIG}`

/** Why a built worker, whose runs live only in the tasks object, refuses its first event without the binding. */
export const MISSING_BINDING_ERROR =
  `[svc] no ${TASKS_BINDING} Durable Object binding: this worker keeps its task runs in the ${TASKS_CLASS} Durable Object it exports, and its wrangler configuration binds none. ` +
  `Deploy with the wrangler.json svc build wrote beside it, or add to yours: ${BINDING_CONFIG}`
