/** Where an app's runs split over several runtimes (the tasks Durable Objects of a worker with `shards`). */
import type { RunRecord, TriggerOptions } from './runs.ts'
import type { CancelledRun, CancelOptions } from './task-runtime.ts'
import type { TaskDefinition } from './task-definition.ts'

/** One runtime of several that split an app's runs (`TaskRuntimeOptions.shard`). */
export interface RuntimeShard {
  /** This runtime's shard: it goes into the id of every run made here (`runIdShard` reads it back), from 0 to 4095. */
  index: number
  /**
   * Whether this runtime starts the run of `def` that an event starts,
   * with the input the task's schema made of the event's data (`undefined`
   * for data that does not fit it) and the run's idempotency key. Every
   * runtime records each event and meets the waits it holds; one starts
   * each run.
   */
  ownsEventRun(def: TaskDefinition, input: unknown, idempotencyKey: string): boolean
  /** Whether this runtime fires the ticks of `def`'s schedule; the others skip it. */
  firesSchedule(def: TaskDefinition): boolean
  /**
   * Optional, with `peers`: the shard a child run of `def` starts in
   * (`ctx.step.enqueue`, `ctx.step.waitForTask`), from the input its schema
   * made and the idempotency key its caller gave (`undefined` when the key
   * is the one derived from the step), so that its task's limits and keys
   * hold across shards; `undefined` starts it in the parent's shard.
   */
  childShard?(def: TaskDefinition, input: unknown, callerKey: string | undefined): number | undefined
  /** The other shards, for the children started in them. */
  peers?: ShardPeers
  /** Called once by the runtime with what the other shards' calls reach here (`ShardPeers.childFinished` lands in its `childFinished`). */
  connect?(here: ShardHere): void
}

/** The calls a runtime makes to the other shards for a child run that lives in one of them. */
export interface ShardPeers {
  /** Starts a run of task `name` in shard `shard`, as `trigger` there would (the parent's id and the step's key are in `opts`). */
  trigger(shard: number, name: string, payload: unknown, opts: TriggerOptions): Promise<RunRecord>
  /** Run `id` as shard `shard` holds it. */
  getRun(shard: number, id: string): Promise<RunRecord | undefined>
  /** Tells shard `shard`, the parent's, that `child` finished: a parent waiting for it resumes. */
  childFinished(shard: number, child: RunRecord): Promise<void>
  /** Cancels run `id`, a child of a run cancelled here, in shard `shard`, with the children below it that `children` reaches. */
  cancel(shard: number, id: string, children: NonNullable<CancelOptions['children']>): Promise<CancelledRun>
}

/** What a runtime that is one shard of several answers to the others. */
export interface ShardHere {
  /** `child`, a run of another shard, finished: its parent here resumes if it waits for it. Resolves once that is recorded. */
  childFinished(child: RunRecord): Promise<void>
}
