/**
 * What the worker's runtimes over tasks objects (`object-runtime.ts`,
 * `sharded-runtime.ts`) have alike: the tasks, and the members that do
 * nothing in an isolate because the engine lives in the objects.
 */
import type { TaskRuntime } from '../types.ts'
import type { CronSummary } from '../runtime/cron.ts'
import { getActiveTaskRuntime, setActiveTaskRuntime } from '../runtime/tasks/client/active.ts'
import type { TaskDefinition } from '../runtime/tasks/definitions/definitions.ts'

/** A runtime whose engine lives in the tasks object, plus the cron call `scheduled()` makes. */
export interface ObjectTaskRuntime extends TaskRuntime {
  /**
   * Fires the tasks of `cron` in the object and resolves once each run's
   * attempts have ended for now (completed, failed or suspended); rejects
   * when one failed, as `fireCron` does.
   */
  fireCron(cron: string): Promise<CronSummary>
}

/** The members of a worker-side runtime that call the objects. */
export type ObjectCalls = Omit<
  ObjectTaskRuntime,
  'tasks' | 'store' | 'startScheduler' | 'stopScheduler' | 'scheduledJobs' | 'recover' | 'drain' | 'close'
>

/** A worker-side runtime: `calls`, plus what every one has alike, whatever the number of objects behind it. */
export function objectRuntime(tasks: ReadonlyMap<string, TaskDefinition>, calls: ObjectCalls): ObjectTaskRuntime {
  const runtime: ObjectTaskRuntime = {
    ...calls,
    tasks,
    get store(): never {
      throw new Error('The run store lives in the SvcTasks Durable Object; read runs with getRun() and listRuns()')
    },
    // No onRunChange: the engine's changes happen in the object, and a
    // stream does not cross the object's call protocol (GET /__tasks/events answers 501).
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
