/**
 * Schedules made at runtime (`TaskRuntime.schedules`, types/schedules.ts).
 * A schedule lives in the run store; its next tick is a durable `schedule`
 * timer (whose `runId` is the schedule's id), so a tick is claimed once
 * across the processes that share the store and survives restarts. When
 * the timer fires (`fire`), the tick starts one run, whose idempotency key
 * is made of the schedule's id and the tick: a tick fired twice (a claim
 * that lapsed, a `backfill` over it) still starts one run. Then the timer
 * of the next tick after now is set: a tick missed while every process was
 * down starts its run once at restart, the ones before it do not
 * (`backfill` starts those). Edge-safe.
 */
import type { Logger, RunRecord } from '../../types.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import type {
  ScheduleChange,
  ScheduleInput,
  ScheduleQuery,
  ScheduleRecord,
  SchedulesApi,
  ScheduleStore,
  ScheduleTick,
} from '../../types/schedules.ts'
import { ScheduleNotFoundError, SvcError, TaskNotFoundError } from '../../errors.ts'
import { describe } from '../../describe.ts'
import { normalizeCron, scheduleProblem, timezoneProblem } from '../../rules.ts'
import { validateTaskInput } from '../../schema.ts'
import { type Clock, instantMs, isoAt } from '../base/clock.ts'
import { svcRunKey, timerId } from '../base/ids.ts'
import type { CronClock } from '../definitions/cron-clock.ts'
import { checkIdempotencyKey } from '../definitions/options.ts'
import type { RunStore, TimerRecord } from '../store/store.ts'

/** The most ticks one `backfill` call starts runs for. */
export const MAX_BACKFILL_TICKS = 1000

const CHANGE_FIELDS = ['cron', 'timezone', 'input', 'enabled']
const INPUT_FIELDS = ['task', 'key', ...CHANGE_FIELDS]

export interface RuntimeSchedulesOptions {
  store: RunStore
  tasks: ReadonlyMap<string, TaskDefinition>
  clock: Clock
  /** Reads cron expressions; a runtime without one cannot hold runtime schedules. */
  cron: CronClock | undefined
  logger: Logger
  /** Makes a schedule's id. */
  newId: (now: number) => string
  /** Records a run of `def` started by `tick` of `schedule`, its input validated. */
  start(def: TaskDefinition, input: unknown, schedule: { id: string; tick: string }, idempotencyKey: string): Promise<RunRecord>
  /** Records a timer and arms it (`Waitpoints.arm`). */
  arm(timer: TimerRecord): Promise<void>
  /** Removes a timer, in the store and in-process. */
  dropTimer(id: string): Promise<void>
}

export class RuntimeSchedules implements SchedulesApi {
  readonly #options: RuntimeSchedulesOptions

  constructor(options: RuntimeSchedulesOptions) {
    this.#options = options
  }

  async create(input: ScheduleInput): Promise<ScheduleRecord> {
    const where = 'schedules.create()'
    const store = this.#store(where)
    if (input === null || typeof input !== 'object' || Array.isArray(input)) {
      throw new TypeError(`${where}: give { task, cron, timezone?, input?, key?, enabled? } (got ${describe(input)})`)
    }
    unknownFields(input, INPUT_FIELDS, where)
    const def = this.#task(input.task, where)
    const key = input.key
    if (key !== undefined) checkIdempotencyKey(key, () => `${where}: key`)
    const now = this.#options.clock.now()
    const schedule: ScheduleRecord = {
      id: this.#options.newId(now),
      task: def.name,
      cron: '',
      timezone: null,
      enabled: true,
      nextAt: null,
      createdAt: isoAt(now),
      updatedAt: isoAt(now),
    }
    if (key !== undefined) schedule.key = key
    await this.#apply(schedule, input, def, where)
    return this.#put(store, schedule)
  }

  async list(query: ScheduleQuery = {}): Promise<ScheduleRecord[]> {
    if (query === null || typeof query !== 'object')
      throw new TypeError(`schedules.list(): query must be { task?, key? } (got ${describe(query)})`)
    return this.#store('schedules.list()').listSchedules!(query)
  }

  get(id: string): Promise<ScheduleRecord | undefined> {
    return this.#store('schedules.get()').getSchedule!(id)
  }

  async update(id: string, change: ScheduleChange): Promise<ScheduleRecord> {
    const where = `schedules.update("${id}")`
    if (change === null || typeof change !== 'object' || Array.isArray(change)) {
      throw new TypeError(`${where}: give the fields to change, { cron?, timezone?, input?, enabled? } (got ${describe(change)})`)
    }
    unknownFields(change, CHANGE_FIELDS, where)
    const store = this.#store(where)
    const schedule = await this.#require(store, id)
    await this.#apply(schedule, change, this.#task(schedule.task, where), where)
    schedule.updatedAt = isoAt(this.#options.clock.now())
    return this.#put(store, schedule)
  }

  pause(id: string): Promise<ScheduleRecord> {
    return this.update(id, { enabled: false })
  }

  resume(id: string): Promise<ScheduleRecord> {
    return this.update(id, { enabled: true })
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.#store(`schedules.delete("${id}")`).deleteSchedule!(id)
    await this.#options.dropTimer(timerId(id, 'schedule'))
    return deleted
  }

  async trigger(id: string): Promise<ScheduleTick> {
    const store = this.#store(`schedules.trigger("${id}")`)
    const started = await this.#start(await this.#require(store, id), isoAt(this.#options.clock.now()))
    // The schedule's last run is this one; a schedule deleted meanwhile stays deleted.
    const latest = await store.getSchedule(id)
    if (latest) await store.putSchedule({ ...latest, lastTick: started.tick, lastRunId: started.runId })
    return started
  }

  async backfill(id: string, from: Date | string, to: Date | string): Promise<ScheduleTick[]> {
    const where = `schedules.backfill("${id}")`
    const start = instant(from, 'from', where)
    const end = instant(to, 'to', where)
    if (end <= start) throw new RangeError(`${where}: to must come after from (got ${isoAt(start)} to ${isoAt(end)})`)
    const schedule = await this.#require(this.#store(where), id)
    const cron = this.#cron(where)
    const ticks: string[] = []
    // `next` is strictly after its argument: a tick at `from` itself counts.
    for (let tick = cron.next(schedule.cron, schedule.timezone, new Date(start - 1)); tick !== null && tick.getTime() < end; ) {
      if (ticks.length === MAX_BACKFILL_TICKS) {
        throw new RangeError(`${where}: the range holds more than ${MAX_BACKFILL_TICKS} ticks; backfill it in parts`)
      }
      ticks.push(tick.toISOString())
      tick = cron.next(schedule.cron, schedule.timezone, tick)
    }
    const started: ScheduleTick[] = []
    for (const tick of ticks) started.push(await this.#start(schedule, tick))
    return started
  }

  /**
   * A `schedule` timer came due at `dueAt`: the tick it stands for starts
   * its run, and the timer of the next tick after now is set. Nothing for
   * a schedule deleted or paused since.
   */
  async fire(id: string, dueAt: string): Promise<void> {
    const store = this.#options.store
    const schedule = await store.getSchedule?.(id)
    if (!schedule?.enabled) return
    let runId: string | undefined
    try {
      runId = (await this.#start(schedule, dueAt)).runId
    } catch (error) {
      // The tick is lost, not the schedule: the next one is still set.
      this.#options.logger.error(`[svc] schedule ${id} of task "${schedule.task}": the tick of ${dueAt} started no run: ${String(error)}`)
    }
    const now = this.#options.clock.now()
    const latest = (await store.getSchedule!(id)) ?? schedule
    if (!latest.enabled) return
    latest.nextAt = this.#next(latest, Math.max(Date.parse(dueAt), now))
    latest.lastTick = dueAt
    if (runId !== undefined) latest.lastRunId = runId
    const saved = await store.putSchedule!(latest)
    await this.#arm(saved)
  }

  /** Arms the timers that enabled schedules lack among `timers` (a crash between writing a schedule and its timer). */
  async recover(timers: readonly TimerRecord[]): Promise<void> {
    const store = this.#options.store
    if (!store.listSchedules || !this.#options.cron) return
    const armed = new Set(timers.filter((timer) => timer.kind === 'schedule').map((timer) => timer.runId))
    for (const schedule of await store.listSchedules({})) {
      if (schedule.enabled && schedule.nextAt !== null && !armed.has(schedule.id)) await this.#arm(schedule)
    }
  }

  /** Checks `change` and writes it into `schedule`, with its next tick. */
  async #apply(schedule: ScheduleRecord, change: ScheduleChange, def: TaskDefinition, where: string): Promise<void> {
    const cron = this.#cron(where)
    if (change.timezone !== undefined) {
      const problem = timezoneProblem(change.timezone)
      if (problem) throw new TypeError(`${where}: ${problem.replace('route.timezone', 'timezone')}`)
      schedule.timezone = change.timezone === 'UTC' ? null : change.timezone
    }
    if (change.cron !== undefined || schedule.cron === '') {
      const problem = scheduleProblem(change.cron, schedule.timezone, cron)
      if (problem) throw new TypeError(`${where}: ${problem.replace(/^schedule /, 'cron ')}`)
      schedule.cron = normalizeCron(change.cron as string)
    }
    if ('input' in change) {
      // Checked now, so a bad input fails here rather than at every tick.
      await validateTaskInput(def.input, change.input)
      if (change.input === undefined) delete schedule.input
      else schedule.input = change.input
    }
    if (change.enabled !== undefined) {
      if (typeof change.enabled !== 'boolean')
        throw new TypeError(`${where}: enabled must be true or false (got ${describe(change.enabled)})`)
      schedule.enabled = change.enabled
    }
    schedule.nextAt = schedule.enabled ? this.#next(schedule, this.#options.clock.now()) : null
  }

  /** Records `schedule`, then sets or drops its timer; the schedule as kept (another id when its key was held). */
  async #put(store: RunStore, schedule: ScheduleRecord): Promise<ScheduleRecord> {
    const kept = await store.putSchedule!(schedule)
    await this.#arm(kept)
    return kept
  }

  async #arm(schedule: ScheduleRecord): Promise<void> {
    const id = timerId(schedule.id, 'schedule')
    if (!schedule.enabled || schedule.nextAt === null) return this.#options.dropTimer(id)
    await this.#options.arm({ id, runId: schedule.id, kind: 'schedule', dueAt: schedule.nextAt })
  }

  /** Starts the run of `tick`, once however often it is asked for. */
  async #start(schedule: ScheduleRecord, tick: string): Promise<ScheduleTick> {
    const def = this.#task(schedule.task, `schedule ${schedule.id}`)
    const input = await validateTaskInput(def.input, schedule.input)
    const run = await this.#options.start(def, input, { id: schedule.id, tick }, svcRunKey('schedule', `${schedule.id}:${tick}`))
    return { tick, runId: run.id }
  }

  /** The first tick of `schedule` after `afterMs`, or null. */
  #next(schedule: ScheduleRecord, afterMs: number): string | null {
    const next = this.#options.cron!.next(schedule.cron, schedule.timezone, new Date(afterMs))
    return next === null ? null : next.toISOString()
  }

  #task(name: unknown, where: string): TaskDefinition {
    if (typeof name !== 'string' || name === '')
      throw new TypeError(`${where}: task must be a task name such as 'jobs.report' (got ${describe(name)})`)
    const def = this.#options.tasks.get(name)
    if (!def) throw new TaskNotFoundError(name, [...this.#options.tasks.keys()])
    return def
  }

  #cron(where: string): CronClock {
    const cron = this.#options.cron
    if (!cron) {
      throw new SvcError(
        `${where}: this task runtime reads no cron expressions (it was made without a cron clock), so it holds no runtime schedules; pass cron: cronerClock (from 'svcjs') to createTaskRuntime`,
        'SCHEDULES_UNSUPPORTED',
        501,
      )
    }
    return cron
  }

  #store(where: string): RunStore & Required<ScheduleStore> {
    const store = this.#options.store
    if (!store.putSchedule || !store.getSchedule || !store.listSchedules || !store.deleteSchedule) {
      throw new SvcError(
        `${where}: this run store keeps no schedules (it lacks putSchedule, getSchedule, listSchedules and deleteSchedule)`,
        'SCHEDULES_UNSUPPORTED',
        501,
      )
    }
    return store as RunStore & Required<ScheduleStore>
  }

  async #require(store: RunStore, id: string): Promise<ScheduleRecord> {
    const schedule = await store.getSchedule!(id)
    if (!schedule) throw new ScheduleNotFoundError(id)
    return schedule
  }
}

function unknownFields(value: object, fields: readonly string[], where: string): void {
  const unknown = Object.keys(value).find((name) => !fields.includes(name))
  if (unknown !== undefined) throw new TypeError(`${where}: a schedule has no field "${unknown}"; its fields are ${fields.join(', ')}`)
}

function instant(value: Date | string, name: string, where: string): number {
  const ms = instantMs(value)
  if (Number.isNaN(ms)) throw new TypeError(`${where}: ${name} must be a Date or an ISO 8601 string (got ${describe(value)})`)
  return ms
}
