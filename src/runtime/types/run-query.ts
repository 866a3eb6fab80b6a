/** What `RunStore.listRuns` and `TaskRuntime.listRuns` filter on (run-store.ts). */
import type { RunStatus } from './runs.ts'

export interface RunQuery {
  /** Only runs of this task. */
  taskName?: string
  /** Only runs in this status (or one of these). */
  status?: RunStatus | readonly RunStatus[]
  /**
   * Only suspended runs whose waitpoint is an event of this name
   * (`ctx.step.waitForEvent`): what a send reads to find the waits it may
   * meet, through an index on the durable stores, so its cost follows the
   * waits on that name and not every suspended run.
   */
  waitingForEvent?: string
  /** Only runs that started on (or moved to) this version of their task (`RunRecord.version`). */
  version?: string
  /** Only runs started with every one of these tags (`EnqueueOptions.tags`). */
  tags?: readonly string[]
  /**
   * Only runs whose metadata (`ctx.metadata`) holds each of these top-level
   * keys with a string, number or boolean value whose text is the one given
   * (`'5'` matches `5` and `"5"`, `'true'` matches `true`).
   */
  metadata?: Readonly<Record<string, string>>
  /** Only runs created at this instant (ISO 8601) or later. */
  from?: string
  /** Only runs created before this instant (ISO 8601). */
  to?: string
  /** At most this many runs, newest first. @default unlimited */
  limit?: number
  /**
   * The id of the last run of the previous page: only runs after it in the
   * store's newest-first order are listed (keyset paging, so runs created
   * meanwhile neither shift nor repeat a page). A cursor naming a run the
   * store does not hold lists none.
   */
  cursor?: string
}
