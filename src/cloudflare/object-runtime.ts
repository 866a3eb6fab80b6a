/**
 * A `TaskRuntime` for the worker side: every call goes to the tasks Durable
 * Object, where the engine and its store live. The worker's admin surface,
 * `enqueue()` and `completeToken()` in app code and `scheduled()` all use
 * it, so each isolate sees the same runs, keys and tokens.
 */
import type { RunRecord, TaskRuntime } from '../types.ts'
import type { CronSummary } from '../runtime/cron.ts'
import { setActiveTaskRuntime, getActiveTaskRuntime } from '../runtime/tasks/active.ts'
import { defineTasks } from '../runtime/tasks/definitions.ts'
import type { RuntimeApiRoute } from '../types.ts'
import { callObject, type StubLike } from './rpc.ts'

/** A runtime whose engine lives in the tasks object, plus the cron call `scheduled()` makes. */
export interface ObjectTaskRuntime extends TaskRuntime {
  /**
   * Fires the tasks of `cron` in the object and resolves once each run's
   * attempts have ended for now (completed, failed or suspended); rejects
   * when one failed, as `fireCron` does.
   */
  fireCron(cron: string): Promise<CronSummary>
}

/**
 * `stub()` is called for every call: a stub belongs to the request that made
 * it, and the runtime outlives requests.
 */
export function createObjectRuntime(routes: readonly RuntimeApiRoute[], stub: () => StubLike): ObjectTaskRuntime {
  const tasks = defineTasks(routes)
  const call = <T>(method: string, ...args: unknown[]) => callObject(stub(), method, args) as Promise<T>
  const runtime: ObjectTaskRuntime = {
    tasks,
    get store(): never {
      throw new Error('The run store lives in the SvcTasks Durable Object; read runs with getRun() and listRuns()')
    },
    trigger: (name: string, payload?: unknown, opts?: unknown) => call<RunRecord>('trigger', name, payload, opts),
    triggerMany: (name: string, payloads: readonly unknown[], opts?: unknown) => call('triggerMany', name, payloads, opts),
    getRun: (id) => call('getRun', id),
    listRuns: (query) => call('listRuns', query),
    waitForRun: (id) => call('waitForRun', id),
    completeToken: (tokenId, payload) => call('completeToken', tokenId, payload),
    sendEvent: (name, data, options) => call('sendEvent', name, data, options),
    sendEvents: (events) => call('sendEvents', events),
    listEvents: (query) => call('listEvents', query),
    cancel: (id) => call('cancel', id),
    replay: (id) => call('replay', id),
    // No onRunChange: the engine's changes happen in the object, and a
    // stream does not cross the object's call protocol (GET /__tasks/events answers 501).
    listTasks: () => call('listTasks'),
    runScheduled: (cron, timezone) => call('runScheduled', cron, timezone),
    fireCron: (cron) => call('fireCron', cron),
    // Cron Triggers fire the schedules (scheduled()); nothing ticks in an isolate.
    startScheduler() {},
    stopScheduler() {},
    scheduledJobs: () =>
      [...tasks.values()].flatMap((def) =>
        def.schedule ? [{ task: def.name, schedule: def.schedule, timezone: 'UTC', nextRun: null, inProcess: false }] : [],
      ),
    // The object recovers on its own each time it wakes, and drains nothing an isolate holds.
    recover: async () => {},
    drain: async () => {},
    async close() {
      if (getActiveTaskRuntime() === runtime) setActiveTaskRuntime(null)
    },
  }
  return runtime
}
