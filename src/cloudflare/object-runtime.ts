/**
 * A `TaskRuntime` for the worker side: every call goes to the tasks Durable
 * Object (or, with `shards`, to the one among several that the call is
 * about), where the engine and its store live. The worker's admin surface,
 * `enqueue()` and `completeToken()` in app code and `scheduled()` all use
 * it, so each isolate sees the same runs, keys and tokens.
 */
import type { RunRecord, RuntimeApiRoute } from '../types.ts'
import { defineTasks } from '../runtime/tasks/definitions/definitions.ts'
import { type ObjectMethod, shardCall, type StubLike } from './rpc.ts'
import { objectRuntime, type ObjectTaskRuntime } from './runtime-base.ts'
import { objectSchedules } from './object-schedules.ts'

export type { ObjectTaskRuntime } from './runtime-base.ts'

/**
 * How a worker reaches its tasks objects, a part `svc build` chooses:
 * `ONE_OBJECT`, or `SHARDED_OBJECTS` (sharded-runtime.ts) for `shards`
 * above 1. `stub(shard)` is called for every call: a stub belongs to the
 * request that made it, and the runtime outlives requests.
 */
export type ObjectsPart = (routes: readonly RuntimeApiRoute[], stub: (shard: number) => StubLike, shards: number) => ObjectTaskRuntime

/** The worker's runtime over the one tasks object; `shards` above 1 are refused, naming `SHARDED_OBJECTS`. */
export const ONE_OBJECT: ObjectsPart = (routes, stub, shards) => {
  if (shards > 1) {
    throw new TypeError(
      `shards is ${shards}, and this worker was built to reach one tasks object (ONE_OBJECT): pass SHARDED_OBJECTS from 'svcjs/cloudflare' in its place, as svc build does when package.json sets svc.cloudflare.shards`,
    )
  }
  const tasks = defineTasks(routes)
  const toShard = shardCall(stub, 1)
  const call = <T>(method: ObjectMethod, ...args: unknown[]) => toShard<T>(0, method, ...args)
  return objectRuntime(tasks, {
    trigger: (name: string, payload?: unknown, opts?: unknown) => call<RunRecord>('trigger', name, payload, opts),
    triggerMany: (name: string, payloads: readonly unknown[], opts?: unknown) => call('triggerMany', name, payloads, opts),
    getRun: (id) => call('getRun', id),
    listRuns: (query) => call('listRuns', query),
    waitForRun: (id) => call('waitForRun', id),
    completeToken: (tokenId, payload) => call('completeToken', tokenId, payload),
    sendSignal: (runId, name, data, options) => call('sendSignal', runId, name, data, options),
    listSignals: (runId) => call('listSignals', runId),
    updateRun: (runId, name, data, options) => call('updateRun', runId, name, data, options) as Promise<never>,
    listUpdates: (runId) => call('listUpdates', runId),
    sendEvent: (name, data, options) => call('sendEvent', name, data, options),
    sendEvents: (events) => call('sendEvents', events),
    listEvents: (query) => call('listEvents', query),
    cancel: (id, options) => call('cancel', id, options),
    replay: (id, options) => call('replay', id, options),
    wake: (id) => call('wake', id),
    fireSchedule: (name) => call('fireSchedule', name),
    schedules: objectSchedules(tasks, 1, (_, operation, ...args) => call('schedules', operation, ...args)),
    listTasks: () => call('listTasks'),
    runScheduled: (cron, timezone) => call('runScheduled', cron, timezone),
    fireCron: (cron) => call('fireCron', cron),
  })
}
