/**
 * What Lambda and Vercel say once at start when an app has task routes: runs
 * live in the instance's memory. One message for both, so the two platforms
 * cannot drift apart.
 */
import type { Logger, TaskRuntime } from './types.ts'

export function instanceStoreWarning(platform: string): string {
  return (
    `[svc] ${platform}: task runs are kept in this function instance's memory, per instance: ` +
    'another instance does not see them, and a run with its timers and waits is lost when the instance is recycled. ' +
    `SVC_STORE_URL is not read on ${platform}: a shared store alone would not be enough, since a function has no process ` +
    'between invocations and nothing would fire sleeps, retries and timeouts without a periodic tick, which svc does not build yet. ' +
    'For durable runs, deploy the tasks with the node target (SVC_STORE_URL, or .svc/runs.db by default).'
  )
}

/** Warns once when the runtime holds tasks in its own memory store (the caller passed no runtime of its own). */
export function warnInstanceStore(platform: string, runtime: TaskRuntime, ownRuntime: boolean, logger: Logger | undefined): void {
  if (ownRuntime || runtime.tasks.size === 0) return
  ;(logger ?? console).warn(instanceStoreWarning(platform))
}
