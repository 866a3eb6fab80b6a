/**
 * A cron clock that ticks on a `Clock` rather than on its own timers: each
 * tick fires at the instant its schedule names (read from `base.next`, so
 * time zones and DST are `base`'s), and is handed that instant. On a
 * virtual clock (`svcjs/testing`), a week of ticks runs in a moment.
 */
import type { Clock, TimerHandle } from '../base/clock.ts'
import type { CronClock } from '../definitions/cron-clock.ts'

/** The longest delay a system timer takes; a tick further off waits in steps. */
const MAX_DELAY = 2 ** 31 - 1

export function clockedCron(clock: Clock, base: CronClock): CronClock {
  return {
    problem: (expression, timezone) => base.problem(expression, timezone),
    next: (expression, timezone, after) => base.next(expression, timezone, after ?? new Date(clock.now())),
    start(expression, timezone, ticks) {
      let next = base.next(expression, timezone, new Date(clock.now()))
      let handle: TimerHandle | undefined
      let stopped = false
      const arm = () => {
        if (stopped || next === null) return
        const delay = next.getTime() - clock.now()
        handle = clock.setTimer(delay > MAX_DELAY ? arm : fire, Math.min(Math.max(delay, 0), MAX_DELAY), ticks.unref)
      }
      const fire = () => {
        const tick = next!
        next = base.next(expression, timezone, tick)
        arm()
        // A tick runs whether or not the one before it has finished, as croner's do.
        Promise.resolve()
          .then(() => ticks.onTick(tick))
          .catch((error: unknown) => ticks.onError(error))
      }
      arm()
      return {
        next: () => (stopped ? null : next),
        stop() {
          stopped = true
          clock.clearTimer(handle)
        },
      }
    },
  }
}
