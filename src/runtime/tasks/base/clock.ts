/**
 * The time of the task engine: what it reads the time from and sets its
 * timers on (`Clock`), and the timestamps of run records, as ISO 8601 text.
 * A runtime takes its clock as `TaskRuntimeOptions.clock`; `systemClock`
 * is the default, and a test may give a virtual one. Edge-safe.
 */

/** What a timer set on a `Clock` is known by, to clear it. */
export type TimerHandle = unknown

export interface Clock {
  /** Epoch milliseconds. */
  now(): number
  /** Calls `fn` after `ms`; `unref` where the platform supports it. */
  setTimer(fn: () => void, ms: number, unref: boolean): TimerHandle
  clearTimer(handle: TimerHandle | undefined): void
}

/** `setTimeout`, unreferenced with `unref` where the platform can (so it never keeps a Node process alive). */
export function setTimer(fn: () => void, ms: number, unref: boolean): ReturnType<typeof setTimeout> {
  const handle = setTimeout(fn, ms)
  // `unref` exists in Node and Deno, not in workers; check before use.
  if (unref && typeof (handle as { unref?: unknown }).unref === 'function') {
    ;(handle as unknown as { unref(): void }).unref()
  }
  return handle
}

/**
 * The platform's clock: `Date.now`, `setTimeout` and `clearTimeout`, each
 * looked up when called, so a test that fakes those globals (vitest's fake
 * timers) moves this clock too.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, ms, unref) => setTimer(fn, ms, unref),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
}

// A busy engine stamps many records within one millisecond (a run's
// creation, its attempt, its end), so the text of the last millisecond
// stamped is kept: they share one string instead of each building a
// `Date` and its text.
let lastMs = Number.NaN
let lastText = ''

/** The ISO 8601 text of `ms` (epoch milliseconds). */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString()
    lastMs = ms
  }
  return lastText
}

/** The ISO 8601 text of `clock`'s now. */
export function isoNowOf(clock: Clock): string {
  return isoAt(clock.now())
}

/** Epoch milliseconds of `value`: a `Date`, an ISO 8601 string, or, with `numbers`, epoch milliseconds; NaN for anything else. */
export function instantMs(value: unknown, numbers = false): number {
  if (value instanceof Date) return value.getTime()
  if (typeof value === 'string') return Date.parse(value)
  return numbers && typeof value === 'number' ? value : Number.NaN
}
