/** A task as the runtime registers it from its route (see `defineTasks`, `src/runtime/tasks/definitions/definitions.ts`). */
import type { TaskFlow } from './flow.ts'
import type { TaskContext } from './task-context.ts'

export interface TaskDefinition {
  /** Dot-form name (`jobs.notify`). */
  name: string
  /** Route path (`/api/jobs/notify`). */
  path: string
  handler: (ctx: TaskContext) => unknown
  /** The `input` export: a Standard Schema or a `defineSchema()` object. */
  input: unknown
  /** Extra attempts after the first failure. */
  retries: number
  /** Per-attempt timeout, milliseconds. */
  timeout: number
  /** Five-field cron expression, normalized to single spaces. */
  schedule: string | null
  /** IANA time zone of the schedule; `null` means UTC. */
  timezone: string | null
  /** The events that start a run of the task (`on`); empty when none. */
  on: string[]
  /** `route.concurrency`, `route.rateLimit`, `route.debounce` and `route.priorityAging`, each absent when unset. */
  flow: TaskFlow
  /** `route.priority`: the priority of a run started without its own. */
  priority: number
  /** `route.retention`, in milliseconds, when the route sets it. */
  retentionMs?: number
  /** `route.maxDuration`, in milliseconds, when the route sets it. */
  maxDurationMs?: number
  /** The version of its code that runs record (`RunRecord.version`), when the app sets one. */
  version?: string
}
