/**
 * What Lambda and Vercel say once at start when an app has task routes: runs
 * live in the instance's memory. One message for both, so the two platforms
 * cannot drift apart.
 */
import type { Logger, TaskRuntime } from './types.ts'

export function instanceStoreWarning(platform: string): string {
  return (
    `[svc] ${platform}: task runs are kept in this function instance, per instance: ` +
    'another instance does not see them, and a run with its timers and waits is lost when the instance is recycled. ' +
    'For durable runs that every instance shares, set SVC_STORE_URL to a postgres:// URL: the one-minute tick that ' +
    '`svc build` schedules then resumes sleeps, retries and timeouts within about a minute of their due time.'
  )
}

/** Warns once when the runtime holds tasks in its own memory store (the caller passed no runtime of its own). */
export function warnInstanceStore(platform: string, runtime: TaskRuntime, ownRuntime: boolean, logger: Logger | undefined): void {
  if (ownRuntime || runtime.tasks.size === 0) return
  ;(logger ?? console).warn(instanceStoreWarning(platform))
}
