/**
 * The task runtime of this process, if any. A server that runs tasks sets it
 * when it starts (`setActiveTaskRuntime(runtime)`) and clears it when it
 * stops; nothing sets it at import. `enqueue()` dispatches in-process when
 * one is set and goes over HTTP otherwise.
 */
import type { TaskRuntime } from '../../types.ts'

// Kept on globalThis under a registered symbol so that two copies of this
// module in one process (a bundle and the source, say) agree.
const KEY: unique symbol = Symbol.for('svc.task.activeRuntime')

type Holder = { [KEY]?: TaskRuntime }

/** Makes `runtime` the one `enqueue()`, `completeToken()` and `runScheduledTasks()` use; `null` clears it. */
export function setActiveTaskRuntime(runtime: TaskRuntime | null): void {
  const holder = globalThis as Holder
  if (runtime === null) delete holder[KEY]
  else holder[KEY] = runtime
}

/** The runtime set by `setActiveTaskRuntime`, or `undefined`. */
export function getActiveTaskRuntime(): TaskRuntime | undefined {
  return (globalThis as Holder)[KEY]
}
