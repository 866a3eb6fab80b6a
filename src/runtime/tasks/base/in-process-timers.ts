/**
 * The in-process side of the timers a store keeps (`waitpoints.ts`):
 * delayed runs, backoff, sleeps and token timeouts, one `setTimeout` per
 * timer id. Every timer is tracked so `close()` can clear them all and a
 * shut-down process is not kept alive by a sleeping run.
 */

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

/** `setTimeout`, unreferenced with `unref` where the platform can (so it never keeps a Node process alive). */
export function setTimer(fn: () => void, ms: number, unref: boolean): ReturnType<typeof setTimeout> {
  const handle = setTimeout(fn, ms)
  // `unref` exists in Node and Deno, not in workers; check before use.
  if (unref && typeof (handle as { unref?: unknown }).unref === 'function') {
    ;(handle as unknown as { unref(): void }).unref()
  }
  return handle
}

export function createTimerSet(options: { unref: boolean }): TimerSet {
  const handles = new Map<string, ReturnType<typeof setTimeout>>()

  function arm(id: string, dueAt: number, fn: () => void): void {
    const delay = Math.max(0, dueAt - Date.now())
    const handle = setTimer(
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
      if (existing !== undefined) clearTimeout(existing)
      arm(id, dueAt, fn)
    },
    clear(id) {
      const handle = handles.get(id)
      if (handle === undefined) return
      clearTimeout(handle)
      handles.delete(id)
    },
    clearAll() {
      for (const handle of handles.values()) clearTimeout(handle)
      handles.clear()
    },
    get size() {
      return handles.size
    },
  }
}
