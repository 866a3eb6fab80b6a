/**
 * The cron clock of every host that ticks schedules in-process, on croner.
 * Edge-safe, but kept out of worker bundles: only hosts that need a clock
 * import this file (see `cron-clock.ts`).
 */
import { Cron } from 'croner'
import type { CronClock } from '../definitions/cron-clock.ts'

/** croner's reading of the five standard fields, the same on every host. */
export function cronOptions(timezone: string | null) {
  return {
    // UTC as an offset rather than a zone name: the same instants, without
    // Intl.DateTimeFormat, whose first use loads the time zone data (tens of
    // milliseconds at every start of a CLI command that checks a schedule).
    ...(timezone === null ? { utcOffset: 0 } : { timezone }),
    // Exactly the five standard fields.
    mode: '5-part' as const,
    // Vixie cron: when both day-of-month and day-of-week are restricted, a
    // day matching either one fires.
    domAndDow: false,
    // Vixie cron's rule for which jobs run once across DST changes.
    fixedTimeRule: 'no-wildcard' as const,
  }
}

export const cronerClock: CronClock = {
  problem(expression, timezone) {
    let job: Cron
    try {
      // Without a callback croner only parses; nothing is scheduled.
      job = new Cron(expression, cronOptions(timezone))
    } catch (error) {
      const reason = error instanceof Error ? error.message.replace(/^CronPattern:\s*/, '') : String(error)
      return `is not a valid cron expression: ${reason}`
    }
    // A pattern such as `0 0 31 2 *` parses but never fires.
    return job.nextRun() === null ? 'never fires: no date matches it' : null
  },

  next(expression, timezone, after) {
    return new Cron(expression, cronOptions(timezone)).nextRun(after)
  },

  start(expression, timezone, ticks) {
    const job = new Cron(
      expression,
      { ...cronOptions(timezone), unref: ticks.unref, catch: (error: unknown) => ticks.onError(error) },
      async (self: Cron) => {
        await ticks.onTick(self.currentRun() ?? new Date())
      },
    )
    return { next: () => job.nextRun(), stop: () => job.stop() }
  },
}
