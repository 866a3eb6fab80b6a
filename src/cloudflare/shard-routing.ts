/**
 * Which tasks object a new run goes to, when runs spread over several
 * (`shards`). A rule that must see every run of a group in one place puts
 * the group in one object:
 *
 * - Flow control (`route.concurrency`, `rateLimit`, `debounce`) is counted
 *   per task and key by the store of one object. When every limit the task
 *   sets reads the same key, its runs go to the object of their key's value
 *   (`flowKey`, the bucket); otherwise (no key, or keys that differ) every
 *   run of the task goes to the object of its name.
 * - An idempotency key is held per task by one object: a run with one goes
 *   to the object of its task and key, unless flow control placed it.
 * - Any other run goes to any object; the caller spreads them.
 *
 * The object is a hash of that text, modulo the number of shards, so
 * every worker isolate and every object finds the same one without asking.
 * Edge-safe.
 */
import { flowKey, type TaskFlow } from '../runtime/tasks/flow/flow.ts'
import type { TaskDefinition } from '../runtime/tasks/definitions/definitions.ts'
import { fnv1a } from '../runtime/hash.ts'
import { cronInput } from '../runtime/tasks/engine/scheduled-runs.ts'
import { runIdShard } from '../runtime/tasks/base/ids.ts'

/** Where a task's runs go: anywhere, by task name, or by the value of one key of their input. */
export type TaskPlacement = { by: 'any' } | { by: 'task' } | { by: 'key'; path: string }

/** The placement of a task's runs, from its flow control. */
export function taskPlacement(flow: TaskFlow): TaskPlacement {
  const limits = [flow.concurrency, flow.rateLimit, flow.debounce].filter((limit) => limit !== undefined)
  if (limits.length === 0) return { by: 'any' }
  const path = limits[0].key
  return path !== undefined && limits.every((limit) => limit.key === path) ? { by: 'key', path } : { by: 'task' }
}

/**
 * The shard of a run of `def` with `input`, or `undefined` when any shard
 * will do. `input` is what the task's schema made of the payload: buckets
 * are read from it, as the store reads them.
 */
export function runShard(def: TaskDefinition, input: unknown, idempotencyKey: string | undefined, shards: number): number | undefined {
  const placement = taskPlacement(def.flow)
  if (placement.by === 'task') return shardOf(`flow\n${def.name}`, shards)
  if (placement.by === 'key') return shardOf(`flow\n${def.name}\n${flowKey(input, placement.path)}`, shards)
  if (idempotencyKey !== undefined) return shardOf(`key\n${def.name}\n${idempotencyKey}`, shards)
  return undefined
}

/**
 * The shard that fires the ticks of `def`'s schedule: its flow shard when
 * it has one, else the shard of its name, so the engine there sees the
 * previous tick's run and skips a tick while that run is live.
 */
export function cronShard(def: TaskDefinition, shards: number): number {
  return runShard(def, cronInput(), undefined, shards) ?? shardOf(`cron\n${def.name}`, shards)
}

/** FNV-1a (32 bits) of `text`, modulo `shards`. */
export function shardOf(text: string, shards: number): number {
  return shards === 1 ? 0 : fnv1a(text) % shards
}

/**
 * The shard that holds run `id` (or token `id`, which starts with its
 * run's id): the one its id names, else shard 0, which made the ids of an
 * app without shards. `undefined` when the id names a shard past
 * `shards`: no object made it, so no such run exists, and asking that
 * shard's object would create it (a Durable Object exists once reached by
 * its name).
 */
export function runHolder(id: string, shards: number): number | undefined {
  const shard = runIdShard(id) ?? 0
  return shard < shards ? shard : undefined
}
