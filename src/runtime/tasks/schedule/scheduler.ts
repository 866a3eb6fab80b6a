/**
 * The in-process cron engine. One job of the runtime's cron clock per
 * scheduled task, started explicitly by the server (never at import). Platforms that fire the cron themselves (edge scheduled events,
 * function platforms) call `runScheduled(cron)` instead; both paths end
 * in the one `fire(name, tick)` callback, where the engine applies the
 * overlap guard, so ticks behave the same on every path.
 */
import type { Logger } from '../../types/logger.ts'
import type { RunRecord } from '../../types/runs.ts'
import type { ScheduledJob } from '../../types/task-runtime.ts'
import { errorMessage } from '../../errors.ts'
import { normalizeCron } from '../../rules.ts'
import type { CronClock, CronJob } from '../definitions/cron-clock.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import { isEnabled, type EnvLike } from '../../env.ts'
import { type Clock, systemClock } from '../base/clock.ts'

/** Turns the in-process scheduler off, for external schedulers. */
export const DISABLE_CRON_ENV = 'SVC_DISABLE_IN_PROCESS_CRON'

export type { ScheduledJob } from '../../types/task-runtime.ts'

export interface TaskSchedulerOptions {
  /** The registered tasks; each one with a schedule gets a job. */
  tasks: ReadonlyMap<string, TaskDefinition>
  logger: Logger
  /** Reads, and fires, the schedules; without one, only `runScheduled` fires them. */
  clock: CronClock | undefined
  /** What the tick of `runScheduled` is read from (the runtime's `clock`). @default systemClock */
  time?: Clock
  /** Unreference the cron timers where the platform supports it. */
  unref: boolean
  /**
   * Starts the run of one tick of a task's schedule. `tick` is the instant
   * the tick stands for. Resolves with the run, or `undefined` when the tick
   * was skipped or could not start; never rejects.
   */
  fire(name: string, tick: Date): Promise<RunRecord | undefined>
}

export class TaskScheduler {
  readonly #scheduled: TaskDefinition[]
  readonly #logger: Logger
  readonly #clock: CronClock | undefined
  readonly #time: Clock
  readonly #unref: boolean
  readonly #fire: (name: string, tick: Date) => Promise<RunRecord | undefined>
  readonly #jobs = new Map<string, CronJob>()
  #started = false

  constructor(options: TaskSchedulerOptions) {
    this.#scheduled = [...options.tasks.values()].filter((def) => def.schedule !== null)
    this.#logger = options.logger
    this.#clock = options.clock
    this.#time = options.time ?? systemClock
    this.#unref = options.unref
    this.#fire = options.fire
  }

  get running(): boolean {
    return this.#jobs.size > 0
  }

  /** The cron jobs by task name, while started. */
  get jobs(): ReadonlyMap<string, CronJob> {
    return this.#jobs
  }

  start(env: EnvLike): void {
    if (this.#started) return
    const scheduled = this.#scheduled
    if (scheduled.length === 0) return
    if (isEnabled(env[DISABLE_CRON_ENV])) {
      this.#logger.info(
        `[svc] in-process cron is off (${DISABLE_CRON_ENV}); scheduled tasks run only when an external scheduler calls runScheduledTasks(cron)`,
      )
      return
    }
    const clock = this.#clock
    if (!clock) {
      throw new Error(
        `startScheduler(): this task runtime has no cron clock, so it cannot fire ${scheduled.map((def) => def.name).join(', ')} in-process. ` +
          `Where the platform fires schedules (Cron Triggers, EventBridge, Vercel cron), it calls runScheduled(cron); elsewhere, pass createTaskRuntime({ cron: cronerClock }) (both from 'svcjs')`,
      )
    }
    this.#started = true
    for (const def of scheduled) {
      const job = clock.start(def.schedule!, def.timezone, {
        unref: this.#unref,
        onTick: (tick) => this.#fire(def.name, tick),
        onError: (error) => this.#logger.error(`[svc] scheduled task "${def.name}": tick failed: ${errorMessage(error)}`),
      })
      this.#jobs.set(def.name, job)
    }
  }

  stop(): void {
    for (const job of this.#jobs.values()) job.stop()
    this.#jobs.clear()
    this.#started = false
  }

  /** Every scheduled task, with its next tick. */
  list(): ScheduledJob[] {
    return this.#scheduled.map((def) => {
      const job = this.#jobs.get(def.name)
      const next = job ? job.next() : this.#clock?.next(def.schedule!, def.timezone)
      return {
        task: def.name,
        schedule: def.schedule!,
        timezone: def.timezone ?? 'UTC',
        nextRun: next?.toISOString() ?? null,
        inProcess: job !== undefined,
      }
    })
  }

  /**
   * Fires the tasks scheduled on `cron` (compared with whitespace
   * normalized). With `timezone`, only those whose schedule is read in that
   * zone (default UTC), so two tasks that share an expression in different
   * zones are told apart by platforms that fire each schedule with its own
   * zone (EventBridge Scheduler).
   */
  async runScheduled(cron: string, timezone?: string): Promise<RunRecord[]> {
    if (typeof cron !== 'string') throw new TypeError(`runScheduled(cron): cron must be a string (got ${typeof cron})`)
    if (timezone !== undefined && typeof timezone !== 'string') {
      throw new TypeError(`runScheduled(cron, timezone): timezone must be a string (got ${typeof timezone})`)
    }
    const wanted = normalizeCron(cron)
    const scheduled = this.#scheduled
    const matching = scheduled.filter((def) => def.schedule === wanted)
    const due = matching.filter((def) => readsIn(def, timezone))
    if (due.length === 0) {
      if (matching.length > 0) {
        const zones = matching.map((def) => `${def.name} (${def.timezone ?? 'UTC'})`).join(', ')
        this.#logger.warn(
          `[svc] runScheduled("${cron}", "${timezone}"): the tasks with this schedule read it in another time zone, so none fired: ${zones}. The event came for ${timezone}`,
        )
        return []
      }
      const known = scheduled.map((def) => `${def.name} ("${def.schedule}")`).join(', ') || 'none'
      // An event without an expression: what `wrangler dev` sends for its bare /cdn-cgi/local/scheduled.
      const empty =
        wanted === ''
          ? ' The event named no schedule: under wrangler dev, name one, as in curl "http://localhost:8787/cdn-cgi/local/scheduled?cron=0+6+*+*+*".'
          : ''
      this.#logger.warn(`[svc] runScheduled("${cron}"): no task has this schedule. Scheduled tasks: ${known}.${empty}`)
      return []
    }
    const tick = new Date(this.#time.now())
    const runs = await Promise.all(due.map((def) => this.#fire(def.name, tick)))
    return runs.filter((run): run is RunRecord => run !== undefined)
  }
}

/** Whether `def` reads its schedule in `timezone` (its own defaults to UTC); with none asked for, any does. */
export function readsIn(def: Pick<TaskDefinition, 'timezone'>, timezone: string | undefined): boolean {
  return timezone === undefined || (def.timezone ?? 'UTC') === timezone
}
