/**
 * Child runs in other shards. On a runtime that is one shard of several
 * (`RuntimeShard`), a child whose task keeps its runs in one place (flow
 * limits read per task or per key) or that its caller gave an idempotency
 * key starts in the shard that owns that place, so the limits and the key
 * hold across shards as they do for runs the worker starts. Its parent
 * learns of its end in two ways:
 *
 * - the child's shard tells the parent's once the end is recorded
 *   (`ShardPeers.childFinished`), which resumes the parent at once;
 * - the parent looks at the child itself when it suspends on it, on every
 *   recovery, and then again and again on a timer (`child`), the wait
 *   between looks growing with the time it has waited, from 5 seconds to
 *   5 minutes: a word lost with an object evicted mid-call is made up for.
 *
 * Either path resumes the parent through the one compare-and-set every
 * waitpoint uses, so the child's output is recorded once. Edge-safe.
 */
import type { CancelledRun, CancelOptions, RunRecord } from '../../types.ts'
import type { RuntimeShard, ShardPeers } from '../../types/shard.ts'
import type { TaskDefinition } from '../../types/task-definition.ts'
import { childIdempotencyKey, runIdShard } from '../base/ids.ts'
import type { CheckedTriggerOptions } from '../definitions/options.ts'

/** The shortest and longest wait between two looks of a parent at a child in another shard. */
const CHILD_LOOK_MIN_MS = 5_000
const CHILD_LOOK_MAX_MS = 300_000

export class ShardChildren {
  readonly #index: number
  readonly #place: NonNullable<RuntimeShard['childShard']>
  readonly #peers: ShardPeers

  constructor(shard: RuntimeShard & Required<Pick<RuntimeShard, 'childShard' | 'peers'>>) {
    this.#index = shard.index
    this.#place = shard.childShard
    this.#peers = shard.peers
  }

  /** The shard a child run of `def` with `input` starts in, when it is not this one. */
  elsewhere(def: TaskDefinition, input: unknown, options: CheckedTriggerOptions): number | undefined {
    const { parentRunId, idempotencyKey } = options
    if (parentRunId === undefined) return undefined
    // The key derived from the parent and the step deduplicates a replay's trigger: it places nothing.
    const callerKey = idempotencyKey?.startsWith(childIdempotencyKey(parentRunId, '')) ? undefined : idempotencyKey
    return this.#other(this.#place(def, input, callerKey))
  }

  /** Starts the child in shard `shard`, which places it there again by the same rule. */
  trigger(shard: number, name: string, payload: unknown, options: CheckedTriggerOptions): Promise<RunRecord> {
    return this.#peers.trigger(shard, name, payload, options)
  }

  /** The shard that holds run `id` (its id names it; an id that names none is shard 0's), when it is not this one. */
  holder(id: string): number | undefined {
    return this.#other(runIdShard(id) ?? 0)
  }

  getRun(shard: number, id: string): Promise<RunRecord | undefined> {
    return this.#peers.getRun(shard, id)
  }

  /** Cancels child run `id` in shard `shard`, which holds it, with the children below it that `children` reaches. */
  cancel(shard: number, id: string, children: NonNullable<CancelOptions['children']>): Promise<CancelledRun> {
    return this.#peers.cancel(shard, id, children)
  }

  /** Tells the shard of `child`'s parent that it finished. */
  notifyParent(shard: number, child: RunRecord): Promise<void> {
    return this.#peers.childFinished(shard, child)
  }

  /** When a parent suspended `since` (ISO) on a child elsewhere looks at it next, at `now` (epoch ms): after as long again as it has waited, within bounds. */
  nextLook(since: string | undefined, now: number): string {
    const waited = now - Date.parse(since ?? '')
    const wait = Number.isNaN(waited) ? CHILD_LOOK_MIN_MS : Math.min(CHILD_LOOK_MAX_MS, Math.max(CHILD_LOOK_MIN_MS, waited))
    return new Date(now + wait).toISOString()
  }

  #other(shard: number | undefined): number | undefined {
    return shard === undefined || shard === this.#index ? undefined : shard
  }
}

/** The children part of `shard`, when it places children elsewhere. */
export function shardChildren(shard: RuntimeShard | undefined): ShardChildren | undefined {
  if (shard?.childShard === undefined || shard.peers === undefined) return undefined
  return new ShardChildren(shard as RuntimeShard & Required<Pick<RuntimeShard, 'childShard' | 'peers'>>)
}
