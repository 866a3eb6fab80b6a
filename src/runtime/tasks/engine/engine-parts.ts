/**
 * The wiring of the task engine's parts: each is created here and handed
 * the others it needs, never the engine. `Dispatcher` (dispatch.ts) runs
 * one attempt of a running run, `FlowPromotion` starts queued runs,
 * `Waitpoints` brings waiting runs back, `Recovery` picks up what a durable
 * store holds, `SharedWorkClaims` (shared-work.ts) claims work on a store
 * several processes share, `ScheduledRuns` starts the runs of a schedule's
 * ticks, `EventStarts` the runs of sent events, and `RunCreation`
 * (run-creation.ts) records every new run.
 */
import type { Logger, RunRecord, TriggerOptions } from '../../types.ts'
import type { EventSchemas } from '../../events/schemas.ts'
import type { Telemetry } from '../../telemetry/types.ts'
import type { RuntimeShard } from '../../types/shard.ts'
import type { TaskDefinition } from '../definitions/definitions.ts'
import { type Clock, systemClock } from '../base/clock.ts'
import { Dispatcher } from './dispatch.ts'
import { EventStarts } from './event-starts.ts'
import { FlowPromotion } from './flow-promotion.ts'
import { type NewRunId, newRunId } from '../base/ids.ts'
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../store/payload-limit.ts'
import { Recovery } from './recovery.ts'
import { Retention } from '../store/retention.ts'
import { RunChanges } from '../store/run-changes.ts'
import { RunCreation } from './run-creation.ts'
import { runLogSink } from '../steps/run-logs.ts'
import { ScheduledRuns } from './scheduled-runs.ts'
import { type ShardChildren, shardChildren } from '../steps/shard-children.ts'
import type { SharedWorkClaims, SharedWorkClaimsOptions } from './shared-work.ts'
import { createStepHost } from '../steps/step-host.ts'
import type { StepCalls } from '../steps/step-calls.ts'
import type { RunStore, SharedWork } from '../store/store.ts'
import type { CronClock } from '../definitions/cron-clock.ts'
import { RuntimeSchedules } from './runtime-schedules.ts'
import type { SignalSendParts } from './signal-sends.ts'
import type { UpdateSendParts } from './update-sends.ts'
import { LiveUpdates } from '../steps/live-updates.ts'
import type { CallbackSigner } from '../steps/callbacks.ts'
import { RunVersions, type VersionPolicy } from '../definitions/versions.ts'
import { RunWaiters } from '../steps/wait-for-run.ts'
import { Waitpoints } from '../steps/waitpoints.ts'

export interface TaskEngineOptions {
  /** Reads the cron expressions of runtime schedules; without one, the engine holds none (runtime-schedules.ts). */
  cron?: CronClock
  store: RunStore
  tasks: ReadonlyMap<string, TaskDefinition>
  logger: Logger
  unrefTimers: boolean
  /** What every part reads the time from and sets its timers on (`TaskRuntimeOptions.clock`). @default systemClock */
  clock?: Clock
  /** Runs the function of each `ctx.step.run`: `svcjs/testing` mocks and counts them (step-calls.ts). */
  callStep?: StepCalls
  /** Makes the URLs of `ctx.step.createCallback` (callbacks.ts). */
  callbacks?: CallbackSigner
  /** Makes run ids, and event ids for events sent without one: `svcjs/testing` makes them in sequence. @default newRunId, crypto.randomUUID */
  ids?: { run: NewRunId; event: () => string }
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
}

/** The parts of one engine, as `engineParts` wires them. */
export interface EngineParts {
  /** The store, seen through telemetry when the engine has it. */
  store: RunStore
  /** What the parts read the time from and set their timers on. */
  clock: Clock
  /** On a store several processes share: how they split the work. */
  shared: SharedWork | undefined
  changes: RunChanges
  waiters: RunWaiters
  waitpoints: Waitpoints
  flow: FlowPromotion
  dispatch: Dispatcher
  sharedWork: SharedWorkClaims | undefined
  recovery: Recovery
  retention: Retention
  scheduled: ScheduledRuns
  events: EventStarts
  creation: RunCreation
  /** On one shard of several: the child runs that start in other shards. */
  children: ShardChildren | undefined
  /** Runtime schedules (`TaskRuntime.schedules`). */
  schedules: RuntimeSchedules
  /** What `sendSignal` works with (signal-sends.ts). */
  signals: SignalSendParts
  /** What `updateRun` works with (update-sends.ts). */
  updates: UpdateSendParts
}

/** The parts of an engine, wired; `trigger` is the engine's, which steps and schedules start runs through. */
export function engineParts(
  options: TaskEngineOptions,
  trigger: (name: string, payload?: unknown, opts?: TriggerOptions) => Promise<RunRecord>,
): EngineParts {
  const { tasks, logger, unrefTimers, telemetry } = options
  const clock = options.clock ?? systemClock
  const store = telemetry === undefined ? options.store : telemetry.store(options.store)
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES
  const shared = store.shared
  const Claims = options.sharedWork
  if (shared && !Claims) {
    throw new TypeError('This task runtime cannot run on a store several processes share; create it with createTaskRuntime() from svc')
  }
  // The engine's own id names it to other processes: random, whatever makes the runs' ids.
  const owner = newRunId(clock.now())
  const newId = options.ids?.run ?? newRunId
  const children = shardChildren(options.shard)
  // On a shared store, the other processes' changes too (events.ts).
  const changes = new RunChanges(logger, shared && { shared, owner })
  const waiters = new RunWaiters(store)
  const liveUpdates = new LiveUpdates()
  // A run that may go on again (a waitpoint met, a wake for updates): dispatched, or left for a slot.
  const goOn = (run: RunRecord): void => {
    changes.emit(run)
    if (run.status === 'queued') flow.startQueuedLater(run.taskName)
    else dispatch.start(run)
  }
  // The parts call each other through these callbacks, which run only
  // once every part exists.
  const waitpoints: Waitpoints = new Waitpoints({
    store,
    logger,
    unrefTimers,
    clock,
    maxPayloadBytes,
    dispatch: goOn,
    startStatus: (taskName) => flow.startStatus(taskName),
    windowFreed: (runId) => flow.windowFreed(runId),
    expired: (run) => {
      telemetry?.runFinished(run)
      changes.emit(run)
      // A background failure is never silent (attempt-outcome.ts logs the others).
      logger.error(`[svc] task "${run.taskName}" failed (run ${run.id}): ${run.attempts.at(-1)?.error}`)
      waiters.settle(run)
      waitpoints.finished(run)
      flow.startQueuedLater(run.taskName)
    },
    scheduleDue: (scheduleId, dueAt) => schedules.fire(scheduleId, dueAt),
    owner,
    children,
  })
  options.shard?.connect?.({ childFinished: (child) => waitpoints.childFinishedElsewhere(child) })
  const flow: FlowPromotion = new FlowPromotion({
    store,
    tasks,
    logger,
    clock,
    changes,
    start: (run) => dispatch.start(run),
    arm: (timer) => waitpoints.arm(timer),
  })
  const host = createStepHost({
    store,
    logger,
    clock,
    maxPayloadBytes,
    trigger,
    lostLease: (runId) => dispatch.abortLostLease(runId),
    runLog: runLogSink(logger, options.printRunLogs === true, telemetry),
    callStep: options.callStep,
    callbacks: options.callbacks,
    liveUpdates,
  })
  const versions = new RunVersions({ store, shared, owner, clock, tasks, policy: options.versionPolicy ?? 'migrate', logger })
  const dispatch: Dispatcher = new Dispatcher({
    versions,
    store,
    clock,
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
  const sharedWork =
    shared && Claims && new Claims({ shared, owner, logger, unrefTimers, clock, dispatch, waitpoints, waiters, flow, versions })
  const recovery = new Recovery({ store, logger, waitpoints, dispatch, flow, sharedWork, schedules: (timers) => schedules.recover(timers) })
  const retention = new Retention({ store, tasks, logger, clock, defaultMs: options.retentionMs })
  const scheduled = new ScheduledRuns({ store, logger, shared, trigger: (name) => trigger(name, undefined, { trigger: 'cron' }) })
  const creation = new RunCreation({
    store,
    logger,
    clock,
    newId,
    telemetry,
    maxPayloadBytes,
    changes,
    flow,
    waitpoints,
    dispatch,
    shard: options.shard?.index,
    leaseOwner: shared?.leasesOnCreate ? owner : undefined,
  })
  const schedules = new RuntimeSchedules({
    store,
    tasks,
    clock,
    cron: options.cron,
    logger,
    // Placed as a run id is: with shards, a call about one schedule reaches the object holding it.
    newId: (now) => newRunId(now, options.shard?.index),
    start: (def, input, schedule, idempotencyKey) =>
      creation.create(def, input, { delaySeconds: 0, trigger: 'cron', idempotencyKey, schedule }),
    arm: (timer) => waitpoints.arm(timer),
    dropTimer: (id) => waitpoints.dropTimer(id),
  })
  const events = new EventStarts({
    tasks,
    clock,
    newId: options.ids?.event,
    schemas: options.eventSchemas,
    maxPayloadBytes,
    start: (def, input, { idempotencyKey, event }) =>
      creation.create(def, input, { delaySeconds: 0, trigger: 'event', idempotencyKey, event }),
    reject: (def, data, eventTrigger, message) => creation.reject(def, data, eventTrigger, message),
    record: async (event) => (store.putEvent ? (await store.putEvent(event)).event : event),
    deliver: (event) => waitpoints.deliverEvent(event),
    note: store.noteEventEffects && ((id, effects) => store.noteEventEffects!(id, effects)),
    owns: options.shard && ((def, input, key) => options.shard!.ownsEventRun(def, input, key)),
  })
  return {
    store,
    clock,
    shared,
    changes,
    waiters,
    waitpoints,
    flow,
    dispatch,
    sharedWork,
    recovery,
    retention,
    scheduled,
    events,
    creation,
    children,
    schedules,
    signals: { store, clock, waitpoints, maxPayloadBytes },
    updates: { store, clock, live: liveUpdates, maxPayloadBytes, startStatus: (taskName) => flow.startStatus(taskName), dispatch: goOn },
  }
}
