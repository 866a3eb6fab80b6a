/**
 * The runs a task's schedule starts, one per tick (the scheduler's `fire`
 * callback, `scheduler.ts`). A tick is skipped, with a warning, while the
 * previous scheduled run of the task has not finished (suspended counts as
 * not finished); manual triggers never pass through here, so they bypass
 * this overlap guard. On a shared store the tick is claimed first, keyed
 * on its minute (the resolution of a five-field schedule), so of the
 * processes that fire it one starts a run; the guard then looks at every
 * process's runs.
 */
import type { Logger, RunRecord } from '../../types.ts'
import { errorMessage, TickSkippedError } from '../../errors.ts'
import { isFinished, LIVE_STATUSES, type RunStore, type SharedWork } from '../store/store.ts'

/** The input of a scheduled run, which skips validation (a new object each time: a handler may change its input). */
export function cronInput(): { _cron: true } {
  return { _cron: true }
}

export function isCronInput(input: unknown): boolean {
  return typeof input === 'object' && input !== null && Object.keys(input).length === 1 && (input as { _cron?: unknown })._cron === true
}

export interface ScheduledRunsOptions {
  store: RunStore
  logger: Logger
  shared: SharedWork | undefined
  /** Starts a scheduled run of the task (`trigger: 'cron'`). */
  trigger(name: string): Promise<RunRecord>
}

export class ScheduledRuns {
  readonly #store: RunStore
  readonly #logger: Logger
  readonly #shared: SharedWork | undefined
  readonly #trigger: (name: string) => Promise<RunRecord>
  /** Last scheduled run per task, for the overlap guard. */
  readonly #lastScheduled = new Map<string, string>()
  /** Tasks whose tick is being checked right now (the guard itself awaits the store). */
  readonly #firing = new Set<string>()

  constructor(options: ScheduledRunsOptions) {
    this.#store = options.store
    this.#logger = options.logger
    this.#shared = options.shared
    this.#trigger = options.trigger
  }

  /**
   * One tick of task `name`'s schedule; `tick` is the instant it stands
   * for. Resolves to the run it started, if any. Never rejects: a failure
   * is logged with the task name.
   */
  async fire(name: string, tick: Date): Promise<RunRecord | undefined> {
    try {
      const started = await this.#tick(name, tick)
      if (!('skipped' in started)) return started
      // Of the processes on a shared store that fire a tick, one starts its run: the others say nothing.
      if (!started.claimedElsewhere) this.#logger.warn(`[svc] scheduled task "${name}": skipped a tick; ${started.skipped}`)
      return undefined
    } catch (error) {
      this.#logger.error(`[svc] scheduled task "${name}" could not start: ${errorMessage(error)}`)
      return undefined
    }
  }

  /**
   * As `fire`, for a tick an operator asks for (`TaskRuntime.fireSchedule`):
   * rejects with `TickSkippedError` naming why the tick started no run, and
   * with the error of a run that could not start.
   */
  async fireNow(name: string, tick: Date): Promise<RunRecord> {
    const started = await this.#tick(name, tick)
    if ('skipped' in started) throw new TickSkippedError(name, started.skipped)
    return started
  }

  /** The run a tick started, or why it started none. */
  async #tick(name: string, tick: Date): Promise<RunRecord | { skipped: string; claimedElsewhere?: true }> {
    if (this.#firing.has(name)) return { skipped: 'the previous tick is still starting' }
    this.#firing.add(name)
    try {
      if (this.#shared) {
        const minute = new Date(Math.floor(tick.getTime() / 60_000) * 60_000).toISOString()
        if (!(await this.#shared.claimTick(name, minute))) {
          return {
            skipped: `the tick of minute ${minute} already started a run; on a store several processes share, a schedule fires once a minute, so fire it again in the next minute`,
            claimedElsewhere: true,
          }
        }
      }
      const last = await this.#lastScheduledRun(name)
      if (last && !isFinished(last.status)) {
        return {
          skipped: `the previous scheduled run ${last.id} is still ${last.status}; a schedule starts one run at a time, so cancel that run or wait for it to finish`,
        }
      }
      const run = await this.#trigger(name)
      this.#lastScheduled.set(name, run.id)
      return run
    } finally {
      this.#firing.delete(name)
    }
  }

  /** The newest scheduled run of the task this engine knows of; on a shared store, one still live from any process. */
  async #lastScheduledRun(name: string): Promise<RunRecord | undefined> {
    if (this.#shared) {
      const live = await this.#store.listRuns({ taskName: name, status: LIVE_STATUSES })
      return live.find((run) => run.trigger === 'cron')
    }
    const lastId = this.#lastScheduled.get(name)
    return lastId === undefined ? undefined : this.#store.getRun(lastId)
  }
}
