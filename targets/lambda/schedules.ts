import type { ManifestRoute } from '#svc/types.ts'

/** One entry of `schedules.json`: what to create in EventBridge Scheduler for a scheduled task. */
export interface LambdaSchedule {
  task: string
  cron: string
  timezone: string
  /** The invocation input the handler recognizes. */
  input: { svcCron: string; svcTimezone: string }
  /** EventBridge `cron(...)` form, or null when the expression has no equivalent there. */
  scheduleExpression: string | null
  note?: string
}

/**
 * The entry of `schedules.json` for the tick, present when the app has
 * tasks: every minute it invokes the function with `{ "svcTick": true }`,
 * which sweeps the due work of a shared run store (`SVC_STORE_URL`).
 */
export interface LambdaTick {
  tick: true
  cron: '* * * * *'
  timezone: 'UTC'
  input: { svcTick: true }
  scheduleExpression: 'rate(1 minute)'
  note: string
}

export const LAMBDA_TICK: LambdaTick = {
  tick: true,
  cron: '* * * * *',
  timezone: 'UTC',
  input: { svcTick: true },
  scheduleExpression: 'rate(1 minute)',
  note: 'resumes sleeps, retries, delayed runs and token timeouts, and takes over attempts whose instance died, when SVC_STORE_URL names a Postgres store',
}

const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']

/**
 * EventBridge cron has six fields (`min hour dom month dow year`), requires `?`
 * in one of day-of-month and day-of-week, and numbers weekdays 1–7 from
 * Sunday, so weekdays are written as names.
 */
export function toEventBridge(cron: string): { expression: string | null; note?: string } {
  const fields = cron.trim().split(/\s+/)
  if (fields.length !== 5) return { expression: null, note: 'not a five-field expression' }
  let [minute, hour, dom, month, dow] = fields
  if (dow === '*' || dow === '?') dow = '?'
  else if (dom === '*' || dom === '?') dom = '?'
  else return { expression: null, note: 'EventBridge cannot restrict both day-of-month and day-of-week' }
  if (dow !== '?') {
    const named = nameWeekdays(dow)
    if (named === null) return { expression: null, note: `day-of-week "${dow}" has no EventBridge equivalent` }
    dow = named
  }
  return { expression: `cron(${minute} ${hour} ${dom} ${month} ${dow} *)` }
}

function nameWeekdays(field: string): string | null {
  const parts = field.split(',').map((part) => {
    const [range, step] = part.split('/')
    const ends = range.split('-').map((end) => (/^\d+$/.test(end) ? DAY_NAMES[Number(end) % 7] : end.toUpperCase()))
    if (ends.some((end) => end !== '*' && !DAY_NAMES.includes(end))) return null
    // A range that wraps past Saturday (5-7) cannot be written with names.
    if (ends.length === 2 && DAY_NAMES.indexOf(ends[0]) > DAY_NAMES.indexOf(ends[1])) return null
    return ends.join('-') + (step ? `/${step}` : '')
  })
  return parts.includes(null) ? null : parts.join(',')
}

/** Every scheduled task's entry, then the tick when the app has tasks. */
export function lambdaSchedules(routes: ManifestRoute[]): Array<LambdaSchedule | LambdaTick> {
  const tick = routes.some((route) => route.kind === 'task') ? [LAMBDA_TICK] : []
  return [...scheduled(routes), ...tick]
}

function scheduled(routes: ManifestRoute[]): LambdaSchedule[] {
  return routes
    .filter((route) => route.kind === 'task' && route.schedule)
    .map((route) => {
      const cron = route.schedule!
      const { expression, note } = toEventBridge(cron)
      return {
        task: route.name!,
        cron,
        timezone: route.timezone ?? 'UTC',
        input: { svcCron: cron, svcTimezone: route.timezone ?? 'UTC' },
        scheduleExpression: expression,
        ...(note ? { note } : {}),
      }
    })
}
