/**
 * How a run comes to be: its record built from a validated input
 * (`create`), recorded in the store alone, joined to a debounced run or in
 * a batch (`triggerMany`), then started, queued or armed by what it is
 * (`created`). Also the failed run recorded for an event whose data a
 * task's input refused (`reject`). The engine checks the call (the task
 * exists, the runtime is open) and hands it here.
 */
import type { BatchItem, Logger, RunRecord, TriggerOptions } from '../../types.ts'
import { describe } from '../../describe.ts'
import { validateTaskInput } from '../../schema.ts'
import type { Telemetry } from '../../telemetry/types.ts'
import { batchError, batchItemKey, MAX_BATCH_ITEMS } from '../flow/batch.ts'
import { type Clock, isoAt } from '../base/clock.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import type { Dispatcher } from './dispatch.ts'
import type { EventTrigger } from './event-starts.ts'
import type { FlowPromotion } from './flow-promotion.ts'
import { type NewRunId, timerId } from '../base/ids.ts'
import { checkTriggerOptions } from '../definitions/options.ts'
import { assertPayload } from '../store/payload-limit.ts'
import type { RunChanges } from '../store/run-changes.ts'
import type { RunStore } from '../store/store.ts'
import type { Waitpoints } from '../steps/waitpoints.ts'
import { deadlineTimer, runDeadline } from '../steps/deadlines.ts'

/** The options `create` takes: those of a trigger, checked, and what only the engine sets. */
export type CreateOptions = Omit<TriggerOptions, 'delaySeconds' | 'deadline'> & {
  delaySeconds: number
  /** ISO 8601, as `checkTriggerOptions` leaves it. */
  deadline?: string
  replayOf?: string
  event?: RunRecord['event']
  /** Steps the run starts with, recorded as they are (a replay from a step, `replay.ts`). */
  steps?: RunRecord['steps']
  /** The runtime schedule and tick that start it (runtime-schedules.ts). */
  schedule?: RunRecord['schedule']
}

export interface RunCreationOptions {
  store: RunStore
  logger: Logger
  /** What runs' stamps, delays and ids' times are read from. */
  clock: Clock
  /** Makes each run's id (`newRunId`). */
  newId: NewRunId
  telemetry: Telemetry | undefined
  /** The largest input, in bytes of UTF-8 JSON. */
  maxPayloadBytes: number
  changes: RunChanges
  flow: FlowPromotion
  waitpoints: Waitpoints
  dispatch: Dispatcher
  /** The shard that the ids of runs made here name (`RuntimeShard.index`). */
  shard: number | undefined
  /** This engine, on a store that leases the runs it inserts running to the engine that triggered them (`SharedWork.leasesOnCreate`). */
  leaseOwner: string | undefined
}

export class RunCreation {
  readonly #options: RunCreationOptions

  constructor(options: RunCreationOptions) {
    this.#options = options
  }

  /**
   * Records a run of `def` with an input already validated; starts it unless
   * it is delayed. Not async: every run being recorded would hold its frame.
   * With `batch`, the run is built and added to it, and recorded by the
   * caller with the others (`triggerMany`).
   */
  create(def: TaskDefinition, input: unknown, options: CreateOptions, batch?: RunRecord[]): Promise<RunRecord> {
    const { store, telemetry } = this.#options
    const { name } = def
    const { delaySeconds, idempotencyKey, trigger = 'manual', parentRunId, replayOf, event, priority = def.priority, steps = {} } = options
    const deadlineGiven = options.deadline
    assertPayload(
      input,
      this.#options.maxPayloadBytes,
      `trigger("${name}"): the payload cannot be stored as JSON`,
      `The input of task "${name}" is`,
    )
    const now = this.#options.clock.now()
    const iso = isoAt(now)
    // A cron tick, a replay or an event's run is a deliberate single run: it joins no other.
    const debounce = trigger === 'cron' || trigger === 'replay' || trigger === 'event' ? undefined : def.flow.debounce
    const delay = debounce ? Math.max(delaySeconds, debounce.seconds) : delaySeconds
    const delayed = delay > 0
    const status = delayed ? 'scheduled' : this.#options.flow.startStatus(name)
    // `startedAt` goes on after the literal, not in it: the memory store's
    // copy of the record then takes the fields a run's end adds with less
    // room (about 8 bytes less per retained run, measured with bench:tasks).
    const run: RunRecord = {
      id: this.#options.newId(now, this.#options.shard),
      taskName: name,
      status,
      trigger,
      input,
      ok: true,
      attempts: [],
      steps,
      createdAt: iso,
    }
    if (delayed) run.runAt = isoAt(now + delay * 1000)
    else if (status === 'running') run.startedAt = iso
    if (idempotencyKey !== undefined) run.idempotencyKey = idempotencyKey
    if (priority !== 0) run.priority = priority
    if (parentRunId !== undefined) run.parentRunId = parentRunId
    const deadline = runDeadline(def, deadlineGiven, delayed ? now + delay * 1000 : now)
    if (deadline !== undefined) run.deadline = deadline
    if (replayOf !== undefined) run.replayOf = replayOf
    if (options.tags !== undefined && options.tags.length > 0) run.tags = [...options.tags]
    if (options.schedule !== undefined) run.schedule = options.schedule
    if (event !== undefined) run.event = event
    if (def.version !== undefined) run.version = def.version
    const trace = telemetry?.runCreated(run, options.trace)
    if (trace !== undefined) run.trace = trace
    if (debounce) return store.debounceRun(run, debounce.key).then((stored) => this.#created(run, stored, true))
    if (batch !== undefined) {
      batch.push(run)
      return Promise.resolve(run)
    }
    // A bound method rather than a closure: it takes less, and every run
    // being recorded holds it until the store answers.
    const leaseOwner = this.#options.leaseOwner
    if (leaseOwner === undefined) return store.createRun(run).then(this.#created.bind(this, run))
    return store.createRun(run, leaseOwner).then(this.#createdLeased.bind(this, run))
  }

  /** See `TaskRuntime.triggerMany`, for a task the engine found. */
  async triggerMany(def: TaskDefinition, payloads: readonly unknown[], opts?: TriggerOptions): Promise<BatchItem[]> {
    const { name } = def
    const call = `triggerMany("${name}")`
    if (!Array.isArray(payloads)) throw new TypeError(`${call}: payloads must be an array (got ${describe(payloads)})`)
    if (payloads.length > MAX_BATCH_ITEMS) {
      throw new RangeError(
        `${call}: at most ${MAX_BATCH_ITEMS.toLocaleString('en')} runs go in one batch (got ${payloads.length}); send them in batches`,
      )
    }
    const options = checkTriggerOptions(opts, 'triggerMany', name)
    if (options.parentRunId !== undefined)
      throw new TypeError(`${call}: a batch takes no parentRunId; start child runs with ctx.step.enqueue`)
    const { idempotencyKey } = options
    // Each payload is checked on its own; the runs of the valid ones are
    // built, then recorded together, so a batch costs the store one write.
    const batch: RunRecord[] = []
    const built = await Promise.all(
      payloads.map(async (payload, index): Promise<{ run: RunRecord; own: boolean } | BatchItem> => {
        try {
          const input = def.input === undefined || def.input === null ? payload : await validateTaskInput(def.input, payload)
          const item = idempotencyKey === undefined ? options : { ...options, idempotencyKey: batchItemKey(idempotencyKey, index) }
          // A debounced task records each run as it joins or starts one (`own`): no batch write.
          const own = def.flow.debounce !== undefined
          return { run: await this.create(def, input, item, own ? undefined : batch), own }
        } catch (error) {
          return batchError(error)
        }
      }),
    )
    const stored = await this.#createRuns(batch)
    const outcomes = new Map(batch.map((run, i) => [run, stored[i]]))
    return Promise.all(
      built.map(async (item): Promise<BatchItem> => {
        if (!('run' in item)) return item
        const { run, own } = item
        if (own) return { ok: true, id: run.id, status: run.status }
        const outcome = outcomes.get(run)!
        if (outcome instanceof Error) return batchError(outcome)
        try {
          const started = await this.#created(run, outcome)
          return { ok: true, id: started.id, status: started.status }
        } catch (error) {
          return batchError(error)
        }
      }),
    )
  }

  /** A run an event could not start (its data broke the task's input): recorded failed, once per event and task. */
  async reject(def: TaskDefinition, data: unknown, trigger: EventTrigger, message: string): Promise<RunRecord> {
    const now = this.#options.clock.now()
    const iso = isoAt(now)
    const run: RunRecord = {
      id: this.#options.newId(now, this.#options.shard),
      taskName: def.name,
      status: 'failed',
      trigger: 'event',
      input: data,
      ok: false,
      attempts: [{ index: 1, startedAt: iso, durationMs: 0, error: message }],
      steps: {},
      createdAt: iso,
      finishedAt: iso,
      idempotencyKey: trigger.idempotencyKey,
      event: trigger.event,
      ...(def.version === undefined ? {} : { version: def.version }),
    }
    const stored = await this.#options.store.createRun(run)
    if (stored.id === run.id) {
      this.#options.logger.warn(`[svc] task "${def.name}" run ${run.id} failed: ${message}`)
      this.#options.changes.emit(stored)
    }
    return stored
  }

  /** `#created` of a run the store leased to this engine as it inserted it, if it inserted it running. */
  #createdLeased(run: RunRecord, stored: RunRecord): RunRecord | Promise<RunRecord> {
    return this.#created(run, stored, false, stored.id === run.id && run.status === 'running')
  }

  /** Records a batch's runs in one write where the store can, else each as `createRun` does, at once. */
  #createRuns(runs: RunRecord[]): Promise<(RunRecord | Error)[]> {
    if (runs.length === 0) return Promise.resolve([])
    const store = this.#options.store
    if (store.createRuns) return store.createRuns(runs)
    return Promise.all(
      runs.map((run) => store.createRun(run).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))),
    )
  }

  /**
   * Starts, queues or arms the run just recorded. `stored` is another run
   * when that one holds the idempotency key, or when a debounced trigger
   * joined a scheduled run of its key. `leased`: the store leased the run
   * to this engine as it inserted it (`#createdLeased`).
   */
  #created(run: RunRecord, stored: RunRecord, debounced = false, leased = false): RunRecord | Promise<RunRecord> {
    const { changes, waitpoints } = this.#options
    if (stored.id !== run.id) {
      // A debounced trigger joined a scheduled run: it starts later, with this input.
      if (debounced && stored.status === 'scheduled' && stored.runAt === run.runAt) {
        changes.emit(stored)
        return waitpoints.arm({ id: timerId(stored.id, 'delay'), runId: stored.id, kind: 'delay', dueAt: stored.runAt! }).then(() => stored)
      }
      // Otherwise another run holds the idempotency key: that run is the answer.
      return stored
    }
    changes.emit(stored)
    // Armed before the run can wait, so that whatever it waits on, the deadline ends the wait.
    if (stored.deadline !== undefined) return waitpoints.arm(deadlineTimer(stored)).then(() => this.#go(run, stored, leased))
    return this.#go(run, stored, leased)
  }

  /** Starts, queues or delays a run just recorded, by its status. */
  #go(run: RunRecord, stored: RunRecord, leased: boolean): RunRecord | Promise<RunRecord> {
    if (run.status === 'running') {
      this.#options.dispatch.start(stored, leased)
      return run
    }
    if (run.status === 'queued') return this.#options.flow.startQueued(run.taskName).then(() => run)
    return this.#options.waitpoints.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt! }).then(() => run)
  }
}
