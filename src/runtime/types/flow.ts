/** Flow control as a task's route config resolves to it (see `src/runtime/tasks/flow/flow.ts`). */
export interface ConcurrencyLimit {
  /** The most runs at once: per value of `key`, or, with `perKey`, of every key together. */
  limit: number
  /** Dotted path into the input, such as `input.userId`. */
  key?: string
  /** With `key`: the most runs of one key at once, under `limit` for all; free slots go to the keys in turn (fair shares). */
  perKey?: number
}

export interface RateLimit {
  limit: number
  periodSeconds: number
  key?: string
}

export interface Debounce {
  seconds: number
  key?: string
}

/** The limits `RunStore.startQueued` applies to one task. */
export interface FlowLimits {
  concurrency?: ConcurrencyLimit
  rateLimit?: RateLimit
  /**
   * Priority points a queued run gains per second it has waited, or `false`
   * for strict priority order. Absent: `DEFAULT_PRIORITY_AGING`.
   */
  priorityAging?: number | false
}

/** What a route config says about flow control, in resolved form. */
export interface TaskFlow extends FlowLimits {
  debounce?: Debounce
}
