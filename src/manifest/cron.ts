/**
 * Cron expressions for task schedules: the standard five fields (minute,
 * hour, day of month, month, day of week), checked with croner. croner also
 * takes seconds and years (six or seven fields) and nicknames such as
 * `@daily`; schedules must run the same on every target's scheduler, so the
 * five-field form is required here.
 */
import { Cron } from 'croner'

/** An error message for an invalid schedule, or `null` when it is valid. */
export function checkCronExpression(expression: string): string | null {
  const fields = expression.trim().split(/\s+/).filter(Boolean)
  if (fields.length !== 5) {
    return `schedule "${expression}" must be a five-field cron expression (minute hour day-of-month month day-of-week), got ${fields.length} field${fields.length === 1 ? '' : 's'}`
  }
  let job: Cron
  try {
    job = new Cron(expression, { paused: true, mode: '5-part' })
  } catch (error) {
    const reason = String((error as Error).message ?? error).replace(/^CronPattern:\s*/, '')
    return `schedule "${expression}" is not a valid cron expression: ${reason}`
  }
  try {
    // A pattern such as `0 0 31 2 *` parses but never fires.
    if (job.nextRun() === null) return `schedule "${expression}" never fires: no date matches it`
  } finally {
    job.stop()
  }
  return null
}
