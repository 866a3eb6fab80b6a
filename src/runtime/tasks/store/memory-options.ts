/** The options of `MemoryRunStore` (memory-store.ts), their defaults and their checks. Edge-safe. */
import { DEFAULT_MAX_RUNS } from './store-limits.ts'
import { type Clock, systemClock } from '../base/clock.ts'

export interface MemoryRunStoreOptions {
  /**
   * How many runs to retain. Past it, the runs that finished (completed,
   * failed or cancelled) longest ago are evicted first, with their tokens and
   * idempotency keys. Scheduled, running and suspended runs are never
   * evicted: once `maxRuns` of them are live, `createRun` rejects with
   * `StoreFullError` (503 `STORE_FULL`) until some finish.
   * @default 10000
   */
  maxRuns?: number
  /**
   * How much JSON the retained runs and the held events may hold together,
   * in bytes: each run counts its input, result, step outputs, chunks,
   * logs, tokens' payloads and attempt errors, measured as the length of
   * their JSON text, plus a few hundred bytes for the rest of its record;
   * each event its JSON. Past it, finished runs are evicted as for
   * `maxRuns`, longest finished first, then the oldest events. Live runs
   * are never evicted: once they hold `maxBytes` on their own, `createRun`
   * rejects a new live run with `StoreFullError` (503 `STORE_FULL`) until
   * some finish, and `putEvent` rejects an event that does not fit beside
   * them the same way, keeping nothing of it.
   * Note: an estimate of the memory runs and events take, not an exact count.
   * @default 268435456 (256 MiB)
   */
  maxBytes?: number
  /**
   * How many events to hold (`sendEvent`); past it the oldest go first.
   * Events also go once `EVENT_RETENTION_MS` (a day) old.
   * @default 10000
   */
  maxEvents?: number
  /**
   * What the store reads the time from: how old its events are, and when
   * a token was settled. The runtime that makes its default store passes
   * its own `clock`.
   * @default the system clock
   */
  clock?: Clock
}

/** Default bound of the memory store in bytes of JSON: 256 MiB. */
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024

/** Checks `options` and fills in the defaults. */
export function resolveMemoryOptions(options: MemoryRunStoreOptions): Required<MemoryRunStoreOptions> {
  const bounds = {
    maxRuns: options.maxRuns ?? DEFAULT_MAX_RUNS,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxEvents: options.maxEvents ?? DEFAULT_MAX_RUNS,
  }
  for (const [name, value] of Object.entries(bounds)) {
    if (!Number.isInteger(value) || value < 1)
      throw new TypeError(`MemoryRunStore: ${name} must be a positive integer (got ${String(value)})`)
  }
  const clock = options.clock ?? systemClock
  if (clock === null || typeof clock !== 'object' || typeof clock.now !== 'function') {
    throw new TypeError('MemoryRunStore: clock must be a clock with now(), setTimer() and clearTimer()')
  }
  return { ...bounds, clock }
}
