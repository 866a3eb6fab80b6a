/** Where an app's runs split over several runtimes (the tasks Durable Objects of a worker with `shards`). */
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
}
