/**
 * The in-process side of the timers a store keeps (`waitpoints.ts`):
 * delayed runs, backoff, sleeps and token timeouts, one `setTimeout` per
 * timer id. Every timer is tracked so `close()` can clear them all and a
 * shut-down process is not kept alive by a sleeping run. They are set on
 * the runtime's clock (clock.ts).
 */
import type { Clock, TimerHandle } from './clock.ts'

// The platform's timer, which the system clock sets: for the timers that
// keep to wall time whatever the runtime's clock (redispatch and write
// backoffs, shared-store sweeps).
export { setTimer } from './clock.ts'

// setTimeout fires at once (with a warning in Node) for delays longer than
// 2^31 − 1 ms, so longer waits are chained.
const MAX_DELAY_MS = 2 ** 31 - 1

export interface TimerSet {
  /** Calls `fn` at `dueAt` (epoch ms), replacing a timer with the same id. */
  set(id: string, dueAt: number, fn: () => void): void
  clear(id: string): void
  clearAll(): void
  readonly size: number
}

/** The timers of `clock` (`systemClock` in production), by id. */
export function createTimerSet(options: { unref: boolean; clock: Clock }): TimerSet {
  const { clock } = options
  const handles = new Map<string, TimerHandle>()

  function arm(id: string, dueAt: number, fn: () => void): void {
    const delay = Math.max(0, dueAt - clock.now())
    const handle = clock.setTimer(
      () => {
        if (delay > MAX_DELAY_MS) return arm(id, dueAt, fn)
        handles.delete(id)
        fn()
      },
      Math.min(delay, MAX_DELAY_MS),
      options.unref,
    )
    handles.set(id, handle)
  }

  return {
    set(id, dueAt, fn) {
      const existing = handles.get(id)
      if (existing !== undefined) clock.clearTimer(existing)
      arm(id, dueAt, fn)
    },
    clear(id) {
      const handle = handles.get(id)
      if (handle === undefined) return
      clock.clearTimer(handle)
      handles.delete(id)
    },
    clearAll() {
      for (const handle of handles.values()) clock.clearTimer(handle)
      handles.clear()
    },
    get size() {
      return handles.size
    },
  }
}
