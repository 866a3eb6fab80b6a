/**
 * `createTaskRuntime` as the `svcjs` entry exports it: the runtime of
 * `runtime.ts`, reading its schedules with croner unless given another
 * clock. The worker runtimes, whose platforms fire the schedules, import
 * `runtime.ts` itself and so leave croner out of their bundles.
 */
import type { TaskRuntime } from '../types.ts'
import { cronerClock } from './schedule/croner-clock.ts'
import { createSharedRuntime, type TaskRuntimeOptions } from './runtime.ts'

export function createTaskRuntime(options: TaskRuntimeOptions): TaskRuntime {
  // Anything but an options object is left for the runtime to reject, with its message.
  if (options === null || typeof options !== 'object') return createSharedRuntime(options)
  return createSharedRuntime({ ...options, cron: options.cron ?? cronerClock })
}
