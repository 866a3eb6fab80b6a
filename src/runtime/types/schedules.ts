/**
 * Schedules made at runtime (`TaskRuntime.schedules`): a cron expression
 * for a task, with an input of its own, made, paused and removed without a
 * deploy, beside the static `schedule` of route files. docs/run-control.md
 * "Schedules at runtime".
 */

/** What `schedules.create` takes. */
export interface ScheduleInput {
  /** The task each tick starts a run of, in dot form (`jobs.report`). */
  task: string
  /** Five-field cron expression, read in `timezone`. */
  cron: string
  /** IANA time zone. @default 'UTC' */
  timezone?: string
  /** The input of each run, validated against the task's schema when the schedule is made and at each tick. */
  input?: unknown
  /**
   * Names the schedule among those of its task (a tenant's id, say): a
   * second `create` with the same task and key updates that schedule
   * instead of making another.
   */
  key?: string
  /** A paused schedule starts no run until it is resumed. @default true */
  enabled?: boolean
}

/** What `schedules.update` changes; the task and the key stay. */
export type ScheduleChange = Partial<Pick<ScheduleInput, 'cron' | 'timezone' | 'input' | 'enabled'>>

/** A schedule as the store keeps it and the admin API returns it. */
export interface ScheduleRecord {
  id: string
  task: string
  cron: string
  /** `null` is UTC. */
  timezone: string | null
  input?: unknown
  key?: string
  enabled: boolean
  /** When its next tick starts a run (ISO 8601); `null` while it is paused, or when no date matches. */
  nextAt: string | null
  /** The tick its last run stood for (a tick, or `trigger`'s instant), and that run's id. */
  lastTick?: string
  lastRunId?: string
  createdAt: string
  updatedAt: string
}

/** What `schedules.list` filters by. */
export interface ScheduleQuery {
  task?: string
  key?: string
}

/** The run a tick started, by the tick it stood for: what `trigger` and `backfill` answer. */
export interface ScheduleTick {
  tick: string
  runId: string
}

/**
 * The runtime's schedules. Each tick starts one run of the schedule's task,
 * with the schedule's input, `trigger: 'cron'` and `schedule: { id, tick }`
 * on the run, once however many processes share the store (the run's
 * idempotency key is the schedule's and the tick's).
 */
export interface SchedulesApi {
  /** Makes a schedule, or updates the one of the same task and `key`. */
  create(input: ScheduleInput): Promise<ScheduleRecord>
  /** The schedules, oldest first, of a task or key. */
  list(query?: ScheduleQuery): Promise<ScheduleRecord[]>
  get(id: string): Promise<ScheduleRecord | undefined>
  update(id: string, change: ScheduleChange): Promise<ScheduleRecord>
  pause(id: string): Promise<ScheduleRecord>
  resume(id: string): Promise<ScheduleRecord>
  /** Removes it; its runs stay. Resolves to whether there was one. */
  delete(id: string): Promise<boolean>
  /** Starts a run now, as a tick at this instant would, paused or not. */
  trigger(id: string): Promise<ScheduleTick>
  /** Starts one run per tick from `from` (inclusive) to `to` (exclusive), at most 1,000 (`MAX_BACKFILL_TICKS`), each once. */
  backfill(id: string, from: Date | string, to: Date | string): Promise<ScheduleTick[]>
}

/** What a run store keeps of schedules; a store without these cannot hold runtime schedules. */
export interface ScheduleStore {
  /**
   * Records `schedule`, replacing the one with its id; with a `key` already
   * held by another schedule of its task, changes that one instead (its id
   * stays). Resolves to the schedule as kept.
   */
  putSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord>
  getSchedule(id: string): Promise<ScheduleRecord | undefined>
  /** Oldest first. */
  listSchedules(query: ScheduleQuery): Promise<ScheduleRecord[]>
  deleteSchedule(id: string): Promise<boolean>
}
