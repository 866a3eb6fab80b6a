/**
 * Work a request keeps alive past its response (a background ISR render),
 * handed to `waitUntil`. A failure is logged, never thrown at the request
 * that started it; `close()` waits for what is left, up to its deadline.
 */
import type { Logger } from '../types.ts'

export interface Background {
  waitUntil(promise: Promise<unknown>): void
  /** Waits for the work still running until `deadline` (epoch ms). */
  settle(deadline: number): Promise<void>
}

export function createBackground(logger: Logger): Background {
  const running = new Set<Promise<unknown>>()
  return {
    waitUntil(promise) {
      const tracked = Promise.resolve(promise)
        .catch((error) => logger.error('[svc] background work failed:', error))
        .finally(() => running.delete(tracked))
      running.add(tracked)
    },
    async settle(deadline) {
      if (running.size === 0) return
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now())))),
      ])
      clearTimeout(timer)
    },
  }
}
