/**
 * The task engine: the run API (`trigger`, `cancel`, `replay`,
 * `waitForRun`, `completeToken`, `onRunChange`, `drain`, `sweep`,
 * `close`) and the wiring of the parts that move runs through their
 * states. Every transition goes through the store with a compare-and-set
 * on the run's status, so a run is never dispatched twice for the same
 * reason, and the same code path serves in-process waits and durable
 * stores. The run states, and the file that makes each transition:
 *
 *   (none) ──trigger──▶ running | queued | scheduled                       engine.ts
 *   scheduled ──its delay passes──▶ running | queued                       waitpoints.ts
 *   queued ──a slot frees──▶ running                                       flow-promotion.ts
 *   running ──returns──▶ completed                                         attempt-outcome.ts
 *   running ──throws/times out, retries remain──▶ running (after backoff)  attempt-outcome.ts
 *   running ──throws/times out, none remain──▶ failed                      attempt-outcome.ts
 *   running ──unmet wait──▶ suspended                                      attempt-outcome.ts
 *   suspended ──waitpoint met──▶ running | queued (replay)                 waitpoints.ts
 *   scheduled | queued | running | suspended ──cancel──▶ cancelled         engine.ts
 *
 * The parts, each created here and handed the others it needs, never the
 * engine: `Dispatcher` (dispatch.ts) runs one attempt of a running run,
 * `FlowPromotion` starts queued runs, `Waitpoints` brings waiting runs
 * back, `Recovery` picks up what a durable store holds, `SharedWorkClaims`
 * (shared-work.ts) claims work on a store several processes share, and
 * `ScheduledRuns` starts the runs of a schedule's ticks. `SharedWorkClaims`
 * comes as an option: `createTaskRuntime` passes it, while the runtimes the
 * Cloudflare worker makes itself, whose stores no other process shares,
 * leave it out of its bundle.
 */
import { batchError, batchItemKey, MAX_BATCH_ITEMS } from './batch.ts'
import { RunVersions, type VersionPolicy } from './versions.ts'
import type { BatchItem, CompleteTokenResult, Logger, RunChange, RunRecord, TriggerOptions } from '../types.ts'
import { describe } from '../describe.ts'
import { isoAt, isoNow } from './clock.ts'
import { RunFinishedError, RunNotFoundError, TaskNotFoundError } from '../errors.ts'
import { validateTaskInput } from '../schema.ts'
import type { TaskDefinition } from './definitions.ts'
import { Dispatcher } from './dispatch.ts'
import { RunChanges } from './run-changes.ts'
import { FlowPromotion } from './flow-promotion.ts'
import { newRunId, timerId } from './ids.ts'
import { type CheckedTriggerOptions, checkTriggerOptions } from './options.ts'
import { assertPayload, DEFAULT_MAX_PAYLOAD_BYTES } from './payload-limit.ts'
import { Recovery } from './recovery.ts'
import { Retention } from './retention.ts'
import type { RuntimeShard } from '../types/shard.ts'
import { type ShardChildren, shardChildren } from './shard-children.ts'
import { cronInput, isCronInput, ScheduledRuns } from './scheduled-runs.ts'
import type { SharedWorkClaims, SharedWorkClaimsOptions } from './shared-work.ts'
import { createStepHost } from './step-host.ts'
import { LIVE_STATUSES, type RunStore, type SharedWork } from './store.ts'
import { RunWaiters } from './wait-for-run.ts'
import { Waitpoints } from './waitpoints.ts'
import { EventStarts, type EventTrigger } from './event-starts.ts'
import type { EventSchemas } from '../events/schemas.ts'
import type { EventInput, SentEvent } from '../types/events.ts'
import type { Telemetry } from '../telemetry/types.ts'
import { runLogSink } from './run-logs.ts'

export class TaskEngine {
  readonly #store: RunStore
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  readonly #telemetry: Telemetry | undefined
  /** The largest input, result, step output and token payload, in bytes of UTF-8 JSON. */
  readonly #maxPayloadBytes: number
  readonly #changes: RunChanges
  readonly #waiters: RunWaiters
  readonly #waitpoints: Waitpoints
  readonly #flow: FlowPromotion
  readonly #dispatch: Dispatcher
  readonly #recovery: Recovery
  readonly #retention: Retention
  readonly #scheduled: ScheduledRuns
  /** On a store several processes share: how they split the work, and this engine's claims there. */
  readonly #shared: SharedWork | undefined
  readonly #sharedWork: SharedWorkClaims | undefined
  readonly #events: EventStarts
  /** The shard that the ids of runs made here name (`RuntimeShard.index`). */
  readonly #shard: number | undefined
  /** This engine, on a store that leases the runs it inserts running to the engine that triggered them (`SharedWork.leasesOnCreate`). */
  readonly #leaseOwner: string | undefined
  /** On one shard of several: the child runs that start in other shards. */
  readonly #children: ShardChildren | undefined
  #closed = false

  constructor(options: {
    store: RunStore
    tasks: ReadonlyMap<string, TaskDefinition>
    logger: Logger
    unrefTimers: boolean
    /** @default DEFAULT_MAX_PAYLOAD_BYTES */
    maxPayloadBytes?: number
    /** Most handlers running at once (handler-slots.ts). */
    maxConcurrentRuns?: number
    /** The app's event schemas, which check the data of the events sent through this engine. */
    eventSchemas?: EventSchemas
    /** Where spans, metrics and log records go (`otelTelemetry`); none by default. */
    telemetry?: Telemetry
    /** Print each entry a run logs (`ctx.log`) to `logger`, as `svc dev` does. */
    printRunLogs?: boolean
    /** What happens to a run whose version no live process serves (versions.ts). @default 'migrate' */
    versionPolicy?: VersionPolicy
    /** How long finished runs of a task without `route.retention` are kept, in ms (retention.ts); `undefined` keeps them within `maxRuns`. */
    retentionMs?: number
    /** One runtime of several that split an app's runs (`TaskRuntimeOptions.shard`). */
    shard?: RuntimeShard
    /** The claims of the work on a store several processes share; required with such a store. */
    sharedWork?: new (
      options: SharedWorkClaimsOptions,
    ) => SharedWorkClaims
  }) {
    const { tasks, logger, unrefTimers, telemetry } = options
    const store = telemetry === undefined ? options.store : telemetry.store(options.store)
    const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES
    const shared = store.shared
    this.#shard = options.shard?.index
    const Claims = options.sharedWork
    if (shared && !Claims) {
      throw new TypeError('This task runtime cannot run on a store several processes share; create it with createTaskRuntime() from svc')
    }
    const owner = newRunId()
    const children = (this.#children = shardChildren(options.shard))
    this.#store = store
    this.#tasks = tasks
    this.#logger = logger
    this.#telemetry = telemetry
    this.#maxPayloadBytes = maxPayloadBytes
    this.#shared = shared
    this.#leaseOwner = shared?.leasesOnCreate ? owner : undefined
    // On a shared store, the other processes' changes too (events.ts).
    const changes = (this.#changes = new RunChanges(logger, shared && { shared, owner }))
    const waiters = (this.#waiters = new RunWaiters(store))
    // The parts call each other through these callbacks, which run only
    // once every part exists.
    const waitpoints: Waitpoints = new Waitpoints({
      store,
      logger,
      unrefTimers,
      maxPayloadBytes,
      dispatch: (run) => {
        changes.emit(run)
        if (run.status === 'queued') flow.startQueuedLater(run.taskName)
        else dispatch.start(run)
      },
      startStatus: (taskName) => flow.startStatus(taskName),
      windowFreed: (runId) => flow.windowFreed(runId),
      owner,
      children,
    })
    options.shard?.connect?.({ childFinished: (child) => waitpoints.childFinishedElsewhere(child) })
    const flow: FlowPromotion = new FlowPromotion({
      store,
      tasks,
      logger,
      changes,
      start: (run) => dispatch.start(run),
      arm: (timer) => waitpoints.arm(timer),
    })
    const host = createStepHost({
      store,
      logger,
      maxPayloadBytes,
      trigger: (name, payload, opts) => this.trigger(name, payload, opts),
      lostLease: (runId) => dispatch.abortLostLease(runId),
      runLog: runLogSink(logger, options.printRunLogs === true, telemetry),
    })
    const versions = new RunVersions({ store, shared, owner, tasks, policy: options.versionPolicy ?? 'migrate', logger })
    const dispatch: Dispatcher = new Dispatcher({
      versions,
      store,
      tasks,
      logger,
      changes,
      waiters,
      waitpoints,
      flow,
      host,
      shared,
      owner,
      telemetry,
      unrefTimers,
      maxConcurrentRuns: options.maxConcurrentRuns,
    })
    const sharedWork = shared && Claims && new Claims({ shared, owner, logger, unrefTimers, dispatch, waitpoints, waiters, flow, versions })
    this.#waitpoints = waitpoints
    this.#flow = flow
    this.#dispatch = dispatch
    this.#sharedWork = sharedWork
    this.#recovery = new Recovery({ store, logger, waitpoints, dispatch, flow, sharedWork })
    this.#retention = new Retention({ store, tasks, logger, defaultMs: options.retentionMs })
    this.#scheduled = new ScheduledRuns({ store, logger, shared, trigger: (name) => this.trigger(name, undefined, { trigger: 'cron' }) })
    this.#events = new EventStarts({
      tasks,
      schemas: options.eventSchemas,
      maxPayloadBytes,
      start: (def, input, { idempotencyKey, event }) =>
        this.#create(def, input, { delaySeconds: 0, trigger: 'event', idempotencyKey, event }),
      reject: (def, data, trigger, message) => this.#reject(def, data, trigger, message),
      record: async (event) => (store.putEvent ? (await store.putEvent(event)).event : event),
      deliver: (event) => waitpoints.deliverEvent(event),
      note: store.noteEventEffects && ((id, effects) => store.noteEventEffects!(id, effects)),
      owns: options.shard && ((def, input, key) => options.shard!.ownsEventRun(def, input, key)),
    })
  }

  /** See `TaskRuntime.sendEvents`; `call` names the caller in errors. */
  sendEvents(events: readonly EventInput[], call: string): Promise<SentEvent[]> {
    if (this.#closed) return Promise.reject(new Error(`${call}: the task runtime is closed`))
    return this.#events.send(events, call)
  }

  /** A run an event could not start (its data broke the task's input): recorded failed, once per event and task. */
  async #reject(def: TaskDefinition, data: unknown, trigger: EventTrigger, message: string): Promise<RunRecord> {
    const iso = isoNow()
    const run: RunRecord = {
      id: newRunId(undefined, this.#shard),
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
    const stored = await this.#store.createRun(run)
    if (stored.id === run.id) {
      this.#logger.warn(`[svc] task "${def.name}" run ${run.id} failed: ${message}`)
      this.#changes.emit(stored)
    }
    return stored
  }

  trigger(name: string, payload?: unknown, opts?: TriggerOptions): Promise<RunRecord> {
    // Every misuse rejects rather than throws.
    try {
      if (this.#closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
      const def = this.#tasks.get(name)
      if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
      const options = checkTriggerOptions(opts, 'trigger', name)
      // Scheduled runs skip validation and get { _cron: true }; a task
      // without a schema takes its payload as it is, without waiting a turn.
      if (options.trigger === 'cron') return this.#create(def, cronInput(), options)
      if (def.input === undefined || def.input === null) return this.#start(def, payload, payload, options)
      return validateTaskInput(def.input, payload).then((input) => this.#start(def, payload, input, options))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** `#create`, but for a child run whose place is another shard's: triggered there, with `payload` as given. */
  #start(def: TaskDefinition, payload: unknown, input: unknown, options: CheckedTriggerOptions): Promise<RunRecord> {
    const children = this.#children
    const there = children?.elsewhere(def, input, options)
    return there === undefined ? this.#create(def, input, options) : children!.trigger(there, def.name, payload, options)
  }

  async replay(id: string): Promise<RunRecord> {
    if (this.#closed) throw new Error(`Cannot replay run "${id}": the task runtime is closed`)
    const source = await this.#store.getRun(id)
    if (!source) throw new RunNotFoundError(id)
    const def = this.#tasks.get(source.taskName)
    if (!def) throw new TaskNotFoundError(source.taskName, [...this.#tasks.keys()])
    const input = isCronInput(source.input) ? cronInput() : await validateTaskInput(def.input, source.input)
    return this.#create(def, input, { delaySeconds: 0, trigger: 'replay', replayOf: id, priority: source.priority })
  }

  async cancel(id: string): Promise<RunRecord> {
    // A compare-and-set from any live status: a run that finished meanwhile stays as it ended.
    const run = await this.#store.updateRun(
      id,
      { status: 'cancelled', ok: false, finishedAt: isoNow(), suspended: undefined },
      { status: LIVE_STATUSES },
    )
    if (!run) {
      const current = await this.#store.getRun(id)
      if (!current) throw new RunNotFoundError(id)
      throw new RunFinishedError(id, current.status)
    }
    this.#telemetry?.runFinished(run)
    this.#dispatch.cancelAttempt(run)
    await this.#waitpoints.dropRun(id)
    // Another process may run the attempt: woken, it renews its leases at
    // once, finds this one gone, and aborts the attempt there.
    await this.#shared?.wake()
    this.#changes.emit(run)
    this.#waiters.settle(run)
    this.#waitpoints.finished(run)
    // A slot it held is free; a rate-limit timer it carried is gone, so look again.
    this.#flow.startQueuedLater(run.taskName)
    return run
  }

  /** See `TaskRuntime.onRunChange`. */
  onRunChange(listener: (change: RunChange) => void, onEnd?: () => void): () => void {
    return this.#changes.subscribe(listener, onEnd)
  }

  /** One tick of a task's schedule (the scheduler's `fire` callback): `ScheduledRuns.fire`. */
  fireScheduled(name: string, tick: Date): Promise<RunRecord | undefined> {
    return this.#scheduled.fire(name, tick)
  }

  waitForRun(id: string): Promise<RunRecord> {
    return this.#waiters.wait(id, this.#dispatch.endsHere(id))
  }

  completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
    return this.#waitpoints.completeToken(tokenId, payload)
  }

  recover(): Promise<void> {
    this.#retention.start()
    return this.#recovery.recover()
  }

  async drain(timeoutMs = 30_000): Promise<void> {
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) {
      throw new TypeError(`drain(timeoutMs): timeoutMs must be a number of milliseconds, 0 or more (got ${describe(timeoutMs)})`)
    }
    // A process drains on its way out: on a shared store it takes no more
    // work from the others.
    this.#sharedWork?.stopTakingWork()
    // Open event streams would hold the server's drain of requests until its deadline.
    this.#changes.end()
    // Attempts may start more work (a retry, a resumed parent) while it
    // waits, so it looks again until nothing is in flight or time is up.
    const deadline = Date.now() + timeoutMs
    while (this.#dispatch.size > 0) {
      const left = deadline - Date.now()
      if (left <= 0) {
        this.#logger.warn(`[svc] task runtime: ${this.#dispatch.size} attempt(s) still in flight after ${timeoutMs} ms of draining`)
        return
      }
      await this.#dispatch.allOver(left)
    }
  }

  async sweep(options: { untilMs: number; claim?: boolean }): Promise<{ inFlight: number }> {
    const { untilMs, claim = true } = options ?? {}
    if (typeof untilMs !== 'number' || Number.isNaN(untilMs)) {
      throw new TypeError(`sweep({ untilMs }): untilMs must be a time in epoch milliseconds (got ${describe(untilMs)})`)
    }
    const sharedWork = this.#sharedWork
    if (claim && sharedWork?.takingWork) await sharedWork.claimDueWork()
    await this.#retention.due()
    const renewEvery = this.#shared ? Math.max(1, Math.floor(this.#shared.leaseMs / 3)) : Infinity
    while (this.#dispatch.size > 0 && Date.now() < untilMs) {
      await this.#dispatch.allOver(Math.min(untilMs - Date.now(), renewEvery))
      if (sharedWork && this.#dispatch.size > 0) await sharedWork.renewLeases()
    }
    return { inFlight: this.#dispatch.size }
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    this.#closed = true
    this.#flow.close()
    this.#recovery.close()
    this.#retention.close()
    this.#changes.end()
    this.#waitpoints.close()
    this.#dispatch.close()
    this.#waiters.rejectAll(new Error('The task runtime closed before the run finished'))
    // On a shared store the others take this process's attempts over at
    // once rather than after `leaseMs`; the promise settles once they are told.
    return this.#sharedWork ? this.#sharedWork.handOver() : Promise.resolve()
  }

  /**
   * Records a run of `def` with an input already validated; starts it unless
   * it is delayed. Not async: every run being recorded would hold its frame.
   * With `batch`, the run is built and added to it, and recorded by the
   * caller with the others (`triggerMany`).
   */
  #create(
    def: TaskDefinition,
    input: unknown,
    options: Omit<TriggerOptions, 'delaySeconds'> & { delaySeconds: number; replayOf?: string; event?: RunRecord['event'] },
    batch?: RunRecord[],
  ): Promise<RunRecord> {
    const { name } = def
    const { delaySeconds, idempotencyKey, trigger = 'manual', parentRunId, replayOf, event, priority = def.priority } = options
    assertPayload(
      input,
      this.#maxPayloadBytes,
      `trigger("${name}"): the payload cannot be stored as JSON`,
      `The input of task "${name}" is`,
    )
    const now = Date.now()
    const iso = isoAt(now)
    // A cron tick, a replay or an event's run is a deliberate single run: it joins no other.
    const debounce = trigger === 'cron' || trigger === 'replay' || trigger === 'event' ? undefined : def.flow.debounce
    const delay = debounce ? Math.max(delaySeconds, debounce.seconds) : delaySeconds
    const delayed = delay > 0
    const status = delayed ? 'scheduled' : this.#flow.startStatus(name)
    // `startedAt` goes on after the literal, not in it: the memory store's
    // copy of the record then takes the fields a run's end adds with less
    // room (about 8 bytes less per retained run, measured with bench:tasks).
    const run: RunRecord = {
      id: newRunId(now, this.#shard),
      taskName: name,
      status,
      trigger,
      input,
      ok: true,
      attempts: [],
      steps: {},
      createdAt: iso,
    }
    if (delayed) run.runAt = isoAt(now + delay * 1000)
    else if (status === 'running') run.startedAt = iso
    if (idempotencyKey !== undefined) run.idempotencyKey = idempotencyKey
    if (priority !== 0) run.priority = priority
    if (parentRunId !== undefined) run.parentRunId = parentRunId
    if (replayOf !== undefined) run.replayOf = replayOf
    if (event !== undefined) run.event = event
    if (def.version !== undefined) run.version = def.version
    const trace = this.#telemetry?.runCreated(run, options.trace)
    if (trace !== undefined) run.trace = trace
    if (debounce) return this.#store.debounceRun(run, debounce.key).then((stored) => this.#created(run, stored, true))
    if (batch !== undefined) {
      batch.push(run)
      return Promise.resolve(run)
    }
    // A bound method rather than a closure: it takes less, and every run
    // being recorded holds it until the store answers.
    const leaseOwner = this.#leaseOwner
    if (leaseOwner === undefined) return this.#store.createRun(run).then(this.#created.bind(this, run))
    return this.#store.createRun(run, leaseOwner).then(this.#createdLeased.bind(this, run))
  }

  /** `#created` of a run the store leased to this engine as it inserted it, if it inserted it running. */
  #createdLeased(run: RunRecord, stored: RunRecord): RunRecord | Promise<RunRecord> {
    return this.#created(run, stored, false, stored.id === run.id && run.status === 'running')
  }

  /** See `TaskRuntime.triggerMany`. */
  async triggerMany(name: string, payloads: readonly unknown[], opts?: TriggerOptions): Promise<BatchItem[]> {
    if (this.#closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
    const def = this.#tasks.get(name)
    if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
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
          return { run: await this.#create(def, input, item, own ? undefined : batch), own }
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

  /** Records a batch's runs in one write where the store can, else each as `createRun` does, at once. */
  #createRuns(runs: RunRecord[]): Promise<(RunRecord | Error)[]> {
    if (runs.length === 0) return Promise.resolve([])
    const store = this.#store
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
    if (stored.id !== run.id) {
      // A debounced trigger joined a scheduled run: it starts later, with this input.
      if (debounced && stored.status === 'scheduled' && stored.runAt === run.runAt) {
        this.#changes.emit(stored)
        return this.#waitpoints
          .arm({ id: timerId(stored.id, 'delay'), runId: stored.id, kind: 'delay', dueAt: stored.runAt! })
          .then(() => stored)
      }
      // Otherwise another run holds the idempotency key: that run is the answer.
      return stored
    }
    this.#changes.emit(stored)
    if (run.status === 'running') {
      this.#dispatch.start(stored, leased)
      return run
    }
    if (run.status === 'queued') return this.#flow.startQueued(run.taskName).then(() => run)
    return this.#waitpoints.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt! }).then(() => run)
  }
}
