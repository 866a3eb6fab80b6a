/**
 * The in-process cron engine (spec "Task schedule", "Events" 1). One croner
 * job per scheduled task, started explicitly by the server (never at
 * import). Platforms that fire the cron themselves (edge scheduled events,
 * function platforms) call `runScheduled(cron)` instead; both paths go
 * through `fire()`, so the overlap guard and logging are the same.
 */
import { Cron } from 'croner'
import type { Logger, RunRecord } from '../../types.ts'
import { errorMessage } from '../errors.ts'
import { cronOptions, normalizeCron } from '../rules.ts'
import type { TaskDefinition } from './definitions.ts'
import type { TaskEngine } from './engine.ts'
import { isEnabled, type EnvLike } from '../env.ts'
import { isFinished } from './store.ts'

/** Turns the in-process scheduler off, for external schedulers (spec "Task schedule"). */
export const DISABLE_CRON_ENV = 'SVC_DISABLE_IN_PROCESS_CRON'

export interface ScheduledJob {
  task: string
  schedule: string
  timezone: string
  /** ISO timestamp of the next tick, or null when the scheduler is not running. */
  nextRun: string | null
}

export class TaskScheduler {
  #engine: TaskEngine
  #logger: Logger
  #unref: boolean
  #jobs = new Map<string, Cron>()
  #started = false
  /** Last scheduled run per task, for the overlap guard. */
  #last = new Map<string, string>()
  /** Tasks whose tick is being checked right now (the guard itself awaits the store). */
  #firing = new Set<string>()

  constructor(engine: TaskEngine, options: { unref: boolean }) {
    this.#engine = engine
    this.#logger = engine.logger
    this.#unref = options.unref
  }

  get running(): boolean {
    return this.#jobs.size > 0
  }

  /** The croner jobs by task name, while started. */
  get jobs(): ReadonlyMap<string, Cron> {
    return this.#jobs
  }

  #scheduled(): TaskDefinition[] {
    return [...this.#engine.tasks.values()].filter((def) => def.schedule !== null)
  }

  start(env: EnvLike): void {
    if (this.#started) return
    const scheduled = this.#scheduled()
    if (scheduled.length === 0) return
    if (isEnabled(env[DISABLE_CRON_ENV])) {
      this.#logger.info(
        `[svc] in-process cron is off (${DISABLE_CRON_ENV}); scheduled tasks run only when an external scheduler calls runScheduledTasks(cron)`,
      )
      return
    }
    this.#started = true
    for (const def of scheduled) {
      const job = new Cron(
        def.schedule!,
        {
          ...cronOptions(def.timezone),
          unref: this.#unref,
          catch: (error: unknown) =>
            this.#logger.error(`[svc] scheduled task "${def.name}": tick failed: ${errorMessage(error)}`),
        },
        async () => {
          await this.fire(def)
        },
      )
      this.#jobs.set(def.name, job)
    }
  }

  stop(): void {
    for (const job of this.#jobs.values()) job.stop()
    this.#jobs.clear()
    this.#started = false
  }

  /** Every scheduled task, with its next tick while the scheduler runs. */
  list(): ScheduledJob[] {
    return this.#scheduled().map((def) => {
      const next = this.#jobs.get(def.name)?.nextRun() ?? null
      return { task: def.name, schedule: def.schedule!, timezone: def.timezone ?? 'UTC', nextRun: next && next.toISOString() }
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
    const scheduled = this.#scheduled()
    const matching = scheduled.filter((def) => def.schedule === wanted)
    const due = matching.filter((def) => timezone === undefined || (def.timezone ?? 'UTC') === timezone)
    if (due.length === 0) {
      if (matching.length > 0) {
        const zones = matching.map((def) => `${def.name} (${def.timezone ?? 'UTC'})`).join(', ')
        this.#logger.warn(
          `[svc] runScheduled("${cron}", "${timezone}"): the tasks with this schedule read it in another time zone, so none fired: ${zones}. The event came for ${timezone}`,
        )
        return []
      }
      const known = scheduled.map((def) => `${def.name} ("${def.schedule}")`).join(', ') || 'none'
      this.#logger.warn(`[svc] runScheduled("${cron}"): no task has this schedule. Scheduled tasks: ${known}`)
      return []
    }
    const runs = await Promise.all(due.map((def) => this.fire(def)))
    return runs.filter((run): run is RunRecord => run !== undefined)
  }

  /**
   * One tick of a task's schedule. Skips, with a warning, while the previous
   * scheduled run of the task has not finished (suspended counts as not
   * finished); manual triggers never pass through here, so they bypass the
   * guard. Never rejects: a failure is logged with the task name.
   */
  async fire(def: TaskDefinition): Promise<RunRecord | undefined> {
    if (this.#firing.has(def.name)) {
      this.#logger.warn(`[svc] scheduled task "${def.name}": skipped a tick; the previous tick is still starting`)
      return undefined
    }
    this.#firing.add(def.name)
    try {
      const lastId = this.#last.get(def.name)
      const last = lastId === undefined ? undefined : await this.#engine.store.getRun(lastId)
      if (last && !isFinished(last.status)) {
        this.#logger.warn(
          `[svc] scheduled task "${def.name}": skipped a tick; the previous scheduled run ${last.id} is still ${last.status}`,
        )
        return undefined
      }
      const run = await this.#engine.trigger(def.name, undefined, { trigger: 'cron' })
      this.#last.set(def.name, run.id)
      return run
    } catch (error) {
      this.#logger.error(`[svc] scheduled task "${def.name}" could not start: ${errorMessage(error)}`)
      return undefined
    } finally {
      this.#firing.delete(def.name)
    }
  }
}
