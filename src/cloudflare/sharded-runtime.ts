/**
 * The worker's `TaskRuntime` when runs spread over several tasks objects
 * (`shards`), so that an app's background work is not bound by one
 * object's CPU. Each call goes where the run it is about lives:
 *
 * - A new run goes to the shard its placement names (`shard-routing.ts`):
 *   by flow key or task for flow control, by task and idempotency key, or,
 *   with neither, to the next shard in turn.
 * - `getRun`, `cancel`, `replay`, `wake`, `waitForRun`, `sendSignal`,
 *   `listSignals`, `updateRun`, `listUpdates` and `completeToken` (whose token id begins with its
 *   run's id) go to the shard the run's id names
 *   (`runHolder`: each object stamps its shard into the ids it makes). An
 *   id that names none was made before the app had shards, by shard 0; one
 *   that names a shard past `shards` is an unknown run, answered without
 *   waking an object.
 * - Listings ask every shard and merge (`shard-merge.ts`); events go to
 *   every shard, which each start the runs they own (`shard-events.ts`); a
 *   cron tick, or a task's schedule fired now (`fireSchedule`), goes to
 *   the shards that fire its tasks (`cronShard`).
 *
 * Edge-safe.
 */
import { batchError, batchItemKey, MAX_BATCH_ITEMS } from '../runtime/tasks/flow/batch.ts'
import { defineTasks, type TaskDefinition } from '../runtime/tasks/definitions/definitions.ts'
import { checkTriggerOptions } from '../runtime/tasks/definitions/options.ts'
import { validateTaskInput } from '../runtime/schema.ts'
import { normalizeCron } from '../runtime/rules.ts'
import type { CronSummary } from '../runtime/cron.ts'
import type { RunQuery } from '../runtime/tasks/store/store.ts'
import type {
  BatchItem,
  CompleteTokenResult,
  EventPage,
  RunRecord,
  RuntimeApiRoute,
  SentEvent,
  TaskSummary,
  TriggerOptions,
} from '../types.ts'
import { type ObjectMethod, shardCall, type StubLike } from './rpc.ts'
import { objectRuntime, type ObjectTaskRuntime } from './runtime-base.ts'
import { ONE_OBJECT, type ObjectsPart } from './object-runtime.ts'
import { objectSchedules } from './object-schedules.ts'
import { cronShard, runHolder, runShard, taskPlacement } from './shard-routing.ts'
import { eventsWithIds } from './shard-events.ts'
import { RunNotFoundError } from '../runtime/errors.ts'
import { cronInput } from '../runtime/tasks/engine/scheduled-runs.ts'
import { readsIn } from '../runtime/tasks/schedule/scheduler.ts'
import { mergeCron, mergeEventPage, mergeRuns, mergeSent, mergeTasks } from './shard-merge.ts'
import type { EventEffectsHere } from './shard-events.ts'

/** The worker's runtime over `shards` tasks objects, or over the one when `shards` is 1. */
export const SHARDED_OBJECTS: ObjectsPart = (routes, stub, shards) =>
  shards > 1 ? createShardedRuntime(routes, stub, shards) : ONE_OBJECT(routes, stub, shards)

/** A runtime over `shards` tasks objects; `stub(shard)` is called for every call, as a stub belongs to the request that made it. */
export function createShardedRuntime(
  routes: readonly RuntimeApiRoute[],
  stub: (shard: number) => StubLike,
  shards: number,
): ObjectTaskRuntime {
  const tasks = defineTasks(routes)
  const taskOrder = [...tasks.keys()]
  const all = Array.from({ length: shards }, (_, shard) => shard)
  const call = shardCall(stub, shards)
  const every = <T>(method: ObjectMethod, ...args: unknown[]) => Promise.all(all.map((shard) => call<T>(shard, method, ...args)))

  // Runs placed nowhere in particular take the shards in turn, from a random one per isolate.
  let turn = Math.floor(Math.random() * shards)
  const nextShard = () => (turn = (turn + 1) % shards)

  /**
   * Calls `method` with run `id` (or a token id) on the shard that holds
   * it; an id that names a shard past `shards` is answered `missing()`, as
   * an unknown run, without reaching any object. An id that is no string
   * goes to shard 0, which refuses it as a lone object would.
   */
  function toRun<T>(id: unknown, method: ObjectMethod, args: unknown[], missing: () => T): Promise<T> {
    const shard = typeof id === 'string' ? runHolder(id, shards) : 0
    if (shard === undefined) return Promise.resolve().then(missing)
    return call<T>(shard, method, id, ...args)
  }
  const notFound = (id: unknown) => () => {
    throw new RunNotFoundError(id as string)
  }

  /** The shard of a new run of `def`. */
  async function placeRun(def: TaskDefinition, payload: unknown, opts: TriggerOptions | null | undefined): Promise<number> {
    const key = typeof opts?.idempotencyKey === 'string' ? opts.idempotencyKey : undefined
    let input = payload
    if (opts?.trigger === 'cron') input = cronInput()
    // A flow key is read from the input as the task's schema outputs it, as the store reads it.
    else if (taskPlacement(def.flow).by === 'key' && def.input !== undefined && def.input !== null)
      input = await validateTaskInput(def.input, payload)
    return runShard(def, input, key, shards) ?? nextShard()
  }

  async function trigger(name: string, payload?: unknown, opts?: TriggerOptions | null): Promise<RunRecord> {
    const def = tasks.get(name)
    // Options that are no object are refused by any shard alike.
    if (!def || (opts !== undefined && opts !== null && typeof opts !== 'object')) return call(0, 'trigger', name, payload, opts)
    const shard = await placeRun(def, payload, opts)
    return call<RunRecord>(shard, 'trigger', name, payload, opts)
  }

  async function triggerMany(name: string, payloads: readonly unknown[], opts?: TriggerOptions): Promise<BatchItem[]> {
    const def = tasks.get(name)
    if (!def || !Array.isArray(payloads) || payloads.length > MAX_BATCH_ITEMS) return call(0, 'triggerMany', name, payloads, opts)
    const { idempotencyKey: key, parentRunId } = checkTriggerOptions(opts, 'triggerMany', name)
    if (parentRunId !== undefined) return call(0, 'triggerMany', name, payloads, opts)
    const placement = taskPlacement(def.flow).by
    // A key names each item by its index in the whole batch: items placed
    // by their flow key are sent one by one, under the key of their index.
    if (placement === 'key' && key !== undefined) {
      return Promise.all(
        payloads.map((payload, i) =>
          trigger(name, payload, { ...opts, idempotencyKey: batchItemKey(key, i) }).then(
            (run): BatchItem => ({ ok: true, id: run.id, status: run.status }),
            batchError,
          ),
        ),
      )
    }
    const items: BatchItem[] = new Array(payloads.length)
    const groups = new Map<number, number[]>()
    const join = (shard: number, i: number) => {
      const group = groups.get(shard)
      if (group) group.push(i)
      else groups.set(shard, [i])
    }
    if (placement === 'key') {
      await Promise.all(
        payloads.map((payload, i) =>
          placeRun(def, payload, opts).then(
            (shard) => join(shard, i),
            (error) => (items[i] = batchError(error)),
          ),
        ),
      )
    } else {
      // One shard for the task, or for the batch's key; else even slices, one write in each shard.
      const one = runShard(def, undefined, key, shards)
      const slice = Math.ceil(payloads.length / shards)
      const first = nextShard()
      for (let i = 0; i < payloads.length; i++) join(one ?? (first + Math.floor(i / slice)) % shards, i)
    }
    await Promise.all(
      [...groups].map(async ([shard, indexes]) => {
        const answers = await call<BatchItem[]>(
          shard,
          'triggerMany',
          name,
          indexes.map((i) => payloads[i]),
          opts,
        )
        indexes.forEach((i, n) => {
          items[i] = answers[n]
        })
      }),
    )
    return items
  }

  async function sendEvents(events: readonly unknown[], single?: { options: unknown }): Promise<SentEvent[]> {
    const sent = eventsWithIds(events)
    const answers = await Promise.all(
      all.map((shard) => {
        if (!single) return call<SentEvent[]>(shard, 'sendEvents', sent)
        const [{ name, data, id }] = sent
        return call<SentEvent>(shard, 'sendEvent', name, data, { ...(single.options as object), id }).then((answer) => [answer])
      }),
    )
    return sent.map((_, i) =>
      mergeSent(
        answers.map((answer) => answer[i]),
        taskOrder,
      ),
    )
  }

  /** The shards that fire the scheduled tasks a cron firing starts, or `undefined` when none is due. */
  function firingShards(cron: unknown, timezone: unknown): number[] | undefined {
    if (typeof cron !== 'string' || (timezone !== undefined && typeof timezone !== 'string')) return undefined
    const wanted = normalizeCron(cron)
    const due = [...tasks.values()].filter((def) => def.schedule === wanted && readsIn(def, timezone))
    return due.length === 0 ? undefined : [...new Set(due.map((def) => cronShard(def, shards)))]
  }

  return objectRuntime(tasks, {
    trigger: trigger as ObjectTaskRuntime['trigger'],
    triggerMany: triggerMany as ObjectTaskRuntime['triggerMany'],
    getRun: (id) => toRun(id, 'getRun', [], () => undefined),
    async listRuns(query?: RunQuery) {
      if (query !== undefined && (query === null || typeof query !== 'object')) return call(0, 'listRuns', query)
      return mergeRuns(await every<RunRecord[]>('listRunsById', query ?? {}), query?.limit)
    },
    waitForRun: (id) => toRun(id, 'waitForRun', [], notFound(id)),
    completeToken: (tokenId, payload) => toRun<CompleteTokenResult>(tokenId, 'completeToken', [payload], () => 'not_found'),
    sendSignal: (runId, name, data, options) => toRun(runId, 'sendSignal', [name, data, options], notFound(runId)),
    listSignals: (runId) => toRun(runId, 'listSignals', [], notFound(runId)),
    updateRun: (runId, name, data, options) => toRun(runId, 'updateRun', [name, data, options], notFound(runId)) as Promise<never>,
    listUpdates: (runId) => toRun(runId, 'listUpdates', [], notFound(runId)),
    sendEvent: async (name, data, options) => {
      if (options !== undefined && (options === null || typeof options !== 'object')) return call(0, 'sendEvent', name, data, options)
      const [sent] = await sendEvents([{ name, data, id: options?.id }], { options })
      return sent
    },
    sendEvents: (events) => (Array.isArray(events) ? sendEvents(events) : call(0, 'sendEvents', events)),
    async listEvents(query) {
      const page = await call<EventPage>(0, 'listEvents', query)
      const ids = page.events.map((event) => event.id)
      const elsewhere = await Promise.all(all.slice(1).map((shard) => call<EventEffectsHere[]>(shard, 'eventEffects', ids)))
      return mergeEventPage(page, elsewhere, taskOrder)
    },
    cancel: (id, options) => toRun(id, 'cancel', [options], notFound(id)),
    replay: (id, options) => toRun(id, 'replay', [options], notFound(id)),
    wake: (id) => toRun(id, 'wake', [], notFound(id)),
    fireSchedule(name) {
      const def = tasks.get(name)
      // An unknown task, or one without a schedule: shard 0 refuses it, as a lone object would.
      return call(def?.schedule ? cronShard(def, shards) : 0, 'fireSchedule', name)
    },
    schedules: objectSchedules(tasks, shards, (shard, operation, ...args) => call(shard, 'schedules', operation, ...args)),
    listTasks: async () => mergeTasks(await every<TaskSummary[]>('listTasks')),
    async runScheduled(cron, timezone) {
      const firing = firingShards(cron, timezone)
      // No task fires: shard 0 says why, as a lone object would.
      if (!firing) return call(0, 'runScheduled', cron, timezone)
      // Each shard fires the due tasks it owns.
      const started = await Promise.all(firing.map((shard) => call<RunRecord[]>(shard, 'runScheduled', cron, timezone)))
      return started.flat()
    },
    async fireCron(cron) {
      const firing = firingShards(cron, undefined)
      if (!firing) return call(0, 'fireCron', cron)
      const fired = await Promise.allSettled(firing.map((shard) => call<CronSummary>(shard, 'fireCron', cron)))
      const failed = fired.find((result) => result.status === 'rejected')
      if (failed) throw failed.reason
      return mergeCron(fired.map((result) => (result as PromiseFulfilledResult<CronSummary>).value))
    },
  })
}
