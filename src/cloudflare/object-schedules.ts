/**
 * Runtime schedules on Cloudflare (`TaskRuntime.schedules` of the worker's
 * runtimes): each schedule lives in a tasks object, which keeps it in its
 * storage and fires each tick from its alarm, as it fires every other
 * timer; the cron trigger of `wrangler.json` still fires the static
 * schedules of route files. A worker forwards each call to the object
 * with the `schedules` call, naming the operation.
 *
 * With several shards, a schedule lives in the object that fires its
 * task's static schedule (`cronShard`), so its runs start where the task's
 * runs belong; its id names that shard, as a run id does, so a call about
 * one schedule goes to one object, and `list` merges every object's.
 */
import type { ScheduleRecord, SchedulesApi, TaskRuntime } from '../types.ts'
import type { TaskDefinition } from '../runtime/tasks/definitions/definitions.ts'
import { runIdShard } from '../runtime/tasks/base/ids.ts'
import { cronShard } from './shard-routing.ts'

/** The operations of the `schedules` call. */
const OPERATIONS = ['create', 'list', 'get', 'update', 'pause', 'resume', 'delete', 'trigger', 'backfill'] as const
type Operation = (typeof OPERATIONS)[number]

/** In the object: the `schedules` call, on its runtime's schedules. */
export function answerSchedules(runtime: TaskRuntime, operation: unknown, args: unknown[]): Promise<unknown> {
  const schedules = runtime.schedules
  if (!(OPERATIONS as readonly unknown[]).includes(operation))
    throw new TypeError(`SvcTasks: unknown schedules call ${JSON.stringify(operation)}`)
  if (!schedules) throw new TypeError('SvcTasks: this object keeps no runtime schedules')
  const method = schedules[operation as Operation] as (...args: unknown[]) => Promise<unknown>
  return method.apply(schedules, args)
}

/** Sends operation `operation` with `args` to the object of `shard`. */
export type SchedulesCall = <T>(shard: number, operation: Operation, ...args: unknown[]) => Promise<T>

/** In the worker: the schedules of the objects of `shards`, reached through `call`. */
export function objectSchedules(tasks: ReadonlyMap<string, TaskDefinition>, shards: number, call: SchedulesCall): SchedulesApi {
  // A schedule's calls go to the shard its id names; an id no object made goes to shard 0, which answers it is unknown.
  const byId = (id: unknown) => {
    const shard = typeof id === 'string' ? runIdShard(id) : undefined
    return shard !== undefined && shard < shards ? shard : 0
  }
  const one =
    (operation: Exclude<Operation, 'create' | 'list'>) =>
    (id: string, ...rest: unknown[]) =>
      call<never>(byId(id), operation, id, ...rest)
  return {
    create(input) {
      const def = input !== null && typeof input === 'object' && typeof input.task === 'string' ? tasks.get(input.task) : undefined
      // An unknown task, or a bad input: shard 0 refuses it, as a lone object would.
      return call(def ? cronShard(def, shards) : 0, 'create', input)
    },
    async list(query) {
      if (shards === 1) return call(0, 'list', query)
      const lists = await Promise.all(Array.from({ length: shards }, (_, shard) => call<ScheduleRecord[]>(shard, 'list', query)))
      // Oldest first, as one object lists them.
      return lists.flat().sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1))
    },
    get: one('get'),
    update: one('update'),
    pause: one('pause'),
    resume: one('resume'),
    delete: one('delete'),
    trigger: one('trigger'),
    backfill: one('backfill'),
  }
}
