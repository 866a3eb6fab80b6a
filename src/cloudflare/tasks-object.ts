/**
 * `createTasksObject(app)`: the SQLite-backed Durable Object class that runs
 * an app's tasks on Cloudflare Workers. Runs, attempts, steps, timers, tokens
 * and idempotency keys live in its storage (`DurableObjectRunStore`), and
 * attempts run inside it, so a long attempt is not cut off with a request's
 * `waitUntil`. Timers fire in-process while it is in memory; its alarm wakes
 * it after an eviction (see `alarm.ts`), and every wake starts with the
 * engine's `recover()`.
 *
 * Workers reach it through an `ObjectsPart` (`object-runtime.ts`).
 * With `shards`, several instances of the class each hold some of the runs
 * (`sharded-runtime.ts`): each knows its shard from its name, stamps it
 * into the ids of the runs it makes, starts the event runs and fires the
 * schedules its placement names (`shard-routing.ts`), starts a child run
 * in the object its placement names, which tells the parent's object of
 * its end (`childFinished`; shard-children.ts), and answers the two extra
 * calls a worker needs to see them as one (`listRunsById`,
 * `eventEffects`).
 * Edge-safe, and a plain class: no `cloudflare:workers` import.
 */
import type { Logger, RunRecord, RuntimeApiRoute, TaskRuntime } from '../types.ts'
import { fireCron } from '../runtime/cron.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'
import { stringBindings } from '../runtime/env.ts'
import { setActiveTaskRuntime } from '../runtime/tasks/client/active.ts'
import { createCoreRuntime } from '../runtime/tasks/runtime.ts'
import type { Telemetry } from '../runtime/telemetry/types.ts'
import { AlarmClock, type AlarmStorageLike } from './alarm.ts'
import { checkShards, type DurableObjectNamespaceLike, tasksNamespace, tasksStub } from './binding.ts'
import type { ObjectsPart } from './object-runtime.ts'
import { SHARDED_OBJECTS } from './sharded-runtime.ts'
import { answer, callArgs, isObjectMethod, type ObjectCall, type ObjectMethod, shardCall } from './rpc.ts'
import { objectShardIndex, ShardCount } from './shard-count.ts'
import { DurableObjectRunStore, type SqlDurableStorageLike } from './sql-store.ts'
import { cronShard, runShard } from './shard-routing.ts'
import { answerSchedules } from './object-schedules.ts'
import { cronerClock } from '../runtime/tasks/schedule/croner-clock.ts'
import type { RuntimeShard, ShardHere, ShardPeers } from '../runtime/types/shard.ts'

/** The parts of a Durable Object's `ctx` (`DurableObjectState`) the object uses. */
export interface DurableObjectStateLike {
  /** The object's id; `name` is the name the worker reached it by (`svc-tasks`, `svc-tasks-<n>`). */
  readonly id?: { readonly name?: string }
  readonly storage: SqlDurableStorageLike & AlarmStorageLike
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>
}

export interface TasksObjectApp {
  /** The app's API routes; the task routes among them run in the object. */
  routes: readonly RuntimeApiRoute[]
  /** The app's event schemas (the `events` export of `src/events.ts`), which check the events sent to the object. */
  events?: EventSchemas
  /** Where the spans, metrics and log records of the runs in the object go (`otelTelemetry(api)`; docs/observability.md). */
  telemetry?: Telemetry
}

export interface TasksObjectOptions {
  /**
   * Runs retained in the object's storage; the runs that finished longest
   * ago are evicted first, live runs never.
   * @default 10000
   */
  maxRuns?: number
  /** @default console */
  logger?: Logger
  /**
   * Over how many instances of the class runs spread: the same number the
   * worker is given (`createWorker(app, { shards })`), which the build
   * writes into both from `svc.cloudflare.shards` in package.json. It may
   * grow from one deploy to the next, never shrink (docs/deploying.md
   * "More than one tasks object").
   * @default 1
   */
  shards?: number
}

/** What `createTasksObject` returns: a Durable Object class to export from the worker's module. */
export interface TasksObjectClass {
  new (
    state: DurableObjectStateLike,
    env: unknown,
  ): {
    fetch(request: Request): Promise<Response>
    alarm(): Promise<void>
  }
}

const DONE_FOR_NOW = new Set(['completed', 'failed', 'cancelled', 'compensation_failed', 'suspended'])

/**
 * The Durable Object class of a hand-written entry, exported beside the worker:
 *
 * ```ts
 * import { createTasksObject, createWorker } from 'svcjs/cloudflare'
 * const app = { routes, pages }
 * export default createWorker(app)
 * export const SvcTasks = createTasksObject(app)
 * ```
 *
 * and bound in wrangler.json as the build writes it:
 * `"durable_objects": { "bindings": [{ "name": "SVC_TASKS", "class_name": "SvcTasks" }] }`,
 * `"migrations": [{ "tag": "v1", "new_sqlite_classes": ["SvcTasks"] }]`.
 */
export function createTasksObject(app: TasksObjectApp, options: TasksObjectOptions = {}): TasksObjectClass {
  return composeTasksObject(app, SHARDED_OBJECTS, options)
}

/**
 * `createTasksObject` reaching the other tasks objects through `objects`,
 * as `svc build` writes it: `ONE_OBJECT`, or `SHARDED_OBJECTS` when
 * `options.shards` is above 1.
 */
export function composeTasksObject(app: TasksObjectApp, objects: ObjectsPart, options: TasksObjectOptions = {}): TasksObjectClass {
  const logger = options.logger ?? console
  const shards = checkShards(options.shards, 'createTasksObject(app, { shards })')
  return class SvcTasks {
    readonly #runtime: TaskRuntime
    readonly #store: DurableObjectRunStore
    readonly #shards: ShardCount
    readonly #clock: AlarmClock
    readonly #ready: Promise<void>
    /** Runs whose current attempts a cron firing waits for, by id. */
    readonly #watchers = new Map<string, Array<(run: RunRecord) => void>>()
    /** What the other shards' calls reach in this one's engine. */
    #here: ShardHere | undefined

    constructor(state: DurableObjectStateLike, env: unknown) {
      const store = new DurableObjectRunStore(state.storage, {
        maxRuns: options.maxRuns,
        onChange: (run) => {
          this.#clock.update()
          if (run && DONE_FOR_NOW.has(run.status)) this.#settle(run)
        },
      })
      this.#store = store
      this.#shards = new ShardCount(state.storage.sql)
      this.#clock = new AlarmClock(state.storage, store, logger)
      const ns = tasksNamespace(env)
      const index = objectShardIndex(state.id?.name, state.storage.sql, shards)
      const shard = shards > 1 ? objectShard(index, shards, ns, (here) => (this.#here = here)) : undefined
      // The object alone holds its store: no claims of shared work.
      this.#runtime = createCoreRuntime({
        routes: app.routes,
        events: app.events,
        store,
        logger,
        env: stringBindings(env),
        telemetry: app.telemetry,
        shard,
        // Runtime schedules tick from the object's alarm; croner reads their cron.
        cron: cronerClock,
      })
      // enqueue() and completeToken() in task code go through the object's
      // stub, as they do in the worker: an isolate may host both, and each
      // must reach the object the same way.
      if (ns) setActiveTaskRuntime(objects(app.routes, (shard) => tasksStub(ns, shard), shards))
      // Nothing reaches the object before what it stored is picked up again.
      this.#ready = state.blockConcurrencyWhile(async () => {
        await this.#runtime.recover()
        this.#clock.update()
      })
    }

    async fetch(request: Request): Promise<Response> {
      try {
        // A failed recovery is every caller's error, answered as data like any other.
        await this.#ready
        const call = (await request.json()) as ObjectCall
        this.#shards.check(call.shards)
        if (!isObjectMethod(call.method)) throw new TypeError(`SvcTasks: unknown call ${JSON.stringify(call.method)}`)
        return answer({ value: await this.#call(call.method, callArgs(call)) })
      } catch (error) {
        return answer({ error })
      }
    }

    async alarm(): Promise<void> {
      await this.#ready
      this.#clock.fired()
    }

    #call(method: ObjectMethod, args: unknown[]): Promise<unknown> {
      const runtime = this.#runtime
      const [a, b, c] = args as [never, never, never]
      switch (method) {
        case 'trigger':
          return runtime.trigger(a, b, c)
        case 'triggerMany':
          return runtime.triggerMany(a, b, c)
        case 'getRun':
          return runtime.getRun(a)
        case 'listRuns':
          return runtime.listRuns(a)
        case 'waitForRun':
          return runtime.waitForRun(a)
        case 'completeToken':
          return runtime.completeToken(a, b)
        case 'sendSignal':
          return runtime.sendSignal(a, b, c, args[3] as never)
        case 'listSignals':
          return runtime.listSignals(a)
        case 'updateRun':
          return runtime.updateRun(a, b, c, args[3] as never)
        case 'listUpdates':
          return runtime.listUpdates(a)
        case 'sendEvent':
          return runtime.sendEvent(a, b, c)
        case 'sendEvents':
          return runtime.sendEvents(a)
        case 'listEvents':
          return runtime.listEvents(a)
        case 'cancel':
          return runtime.cancel(a, b)
        case 'replay':
          return runtime.replay(a, b)
        case 'wake':
          return runtime.wake(a)
        case 'fireSchedule':
          return runtime.fireSchedule(a)
        case 'schedules':
          return answerSchedules(runtime, a, args.slice(1))
        case 'listTasks':
          return runtime.listTasks()
        case 'runScheduled':
          return runtime.runScheduled(a, b)
        case 'fireCron':
          // A scheduled run may sleep for days; the platform's event cannot
          // wait that long. It waits for the run's attempts to end for now,
          // so a failed first run still fails the event.
          return fireCron({ ...runtime, waitForRun: (id) => this.#attemptsEnded(id) }, a)
        // The calls of a worker whose runs spread over several objects (sharded-runtime.ts).
        case 'listRunsById':
          return this.#store.listRunsById(a)
        case 'eventEffects':
          return this.#store.eventEffects(a)
        // A child run of this shard's, started from another, finished there.
        case 'childFinished':
          if (!this.#here) throw new TypeError('SvcTasks: childFinished reaches an object of several shards only')
          return this.#here.childFinished(a)
        default: {
          // Every call of OBJECT_METHODS has its case: a new one does not compile until it does.
          const unanswered: never = method
          throw new TypeError(`SvcTasks: unknown call "${unanswered}"`)
        }
      }
    }

    /** Resolves with the run once it is completed, failed or suspended. */
    async #attemptsEnded(id: string): Promise<RunRecord> {
      const ended = new Promise<RunRecord>((resolve) => {
        const list = this.#watchers.get(id)
        if (list) list.push(resolve)
        else this.#watchers.set(id, [resolve])
      })
      const run = await this.#runtime.getRun(id)
      if (!run) throw new Error(`SvcTasks: no run has id "${id}"`)
      if (DONE_FOR_NOW.has(run.status)) this.#settle(run)
      return ended
    }

    #settle(run: RunRecord): void {
      const list = this.#watchers.get(run.id)
      if (!list) return
      this.#watchers.delete(run.id)
      for (const resolve of list) resolve(run)
    }
  }
}

/**
 * Shard `index` of `shards`: the event runs it starts and the schedules it
 * fires are those whose placement names it, the same rule by which the
 * worker places the runs it starts (`shard-routing.ts`). A child run goes
 * where that rule puts its task's runs, or its caller's key, and stays in
 * the parent's shard when neither names one; the other objects are reached
 * through `ns`, and their calls reach this one's engine through `connect`.
 */
function objectShard(
  index: number,
  shards: number,
  ns: DurableObjectNamespaceLike | undefined,
  connect: (here: ShardHere) => void,
): RuntimeShard {
  const shard: RuntimeShard = {
    index,
    ownsEventRun: (def, input, idempotencyKey) => runShard(def, input, idempotencyKey, shards) === index,
    firesSchedule: (def) => cronShard(def, shards) === index,
  }
  if (!ns) return shard
  const call = shardCall((to) => tasksStub(ns, to), shards)
  const peers: ShardPeers = {
    trigger: (to, name, payload, opts) => call(to, 'trigger', name, payload, opts),
    // A run id a handler passes on (`waitForRun`) may name a shard past
    // `shards`: no object made it, and asking would create that object.
    getRun: (to, id) => (to < shards ? call(to, 'getRun', id) : Promise.resolve(undefined)),
    childFinished: (to, child) => call(to, 'childFinished', child),
    cancel: (to, id, children) => call(to, 'cancel', id, { children }),
  }
  return {
    ...shard,
    // A child without a place of its own (no flow limit, no key of its caller's) stays with its parent.
    childShard: (def, input, callerKey) => runShard(def, input, callerKey, shards),
    peers,
    connect,
  }
}
