import { describe, expect, it } from 'vitest'
import * as v from 'valibot'
import { scanRouteSource } from '../../src/manifest.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute } from '../../src/types.ts'
import { task } from './_helpers.ts'

const make = (routes: RuntimeApiRoute[]) => createTaskRuntime({ routes, env: {}, logger: console })

describe('task registration', () => {
  it('registers task-kind routes by dot-form name and ignores the others', async () => {
    const rt = make([
      task('jobs.notify', () => 1, { route: { retries: 2, timeout: 500 } }),
      { path: '/api/users', module: { GET: () => 'users' } },
      { path: '/api/live', module: { kind: 'hot', websocket: () => undefined } },
      { path: '/api/report', module: { kind: 'task', POST: () => 2 } },
    ])
    expect([...rt.tasks.keys()]).toEqual(['jobs.notify', 'report'])
    expect(rt.tasks.get('jobs.notify')).toMatchObject({ path: '/api/jobs/notify', retries: 2, timeout: 500 })
    expect(await rt.listTasks()).toEqual([
      {
        name: 'jobs.notify',
        path: '/api/jobs/notify',
        schedule: null,
        events: [],
        retries: 2,
        timeout: 500,
        concurrency: null,
        rateLimit: null,
        debounce: null,
        queued: 0,
        lastRun: null,
      },
      {
        name: 'report',
        path: '/api/report',
        schedule: null,
        events: [],
        retries: 0,
        timeout: 30000,
        concurrency: null,
        rateLimit: null,
        debounce: null,
        queued: 0,
        lastRun: null,
      },
    ])
    await rt.close()
  })

  it('listTasks reports the last run of each task', async () => {
    const rt = make([task('report', () => 1)])
    const run = await rt.trigger('report')
    await rt.waitForRun(run.id)
    const [summary] = await rt.listTasks()
    expect(summary.lastRun).toMatchObject({ id: run.id, status: 'completed' })
    expect(summary.lastRun?.finishedAt).toBeTypeOf('string')
    await rt.close()
  })

  it.each([
    [{ retries: -1 }, /route\.retries must be a whole number of extra attempts, 0 or more \(got -1\)/],
    [{ retries: 1.5 }, /route\.retries must be a whole number of extra attempts, 0 or more \(got 1\.5\)/],
    [{ retries: '2' }, /route\.retries must be a whole number of extra attempts, 0 or more \(got "2"\)/],
    [{ timeout: 0 }, /route\.timeout must be a positive number of milliseconds \(got 0\)/],
    [{ timeout: Infinity }, /route\.timeout .* \(got Infinity\)/],
    [{ timezone: 'Mars/Olympus' }, /route\.timezone must be an IANA time zone such as 'Europe\/Berlin' or 'UTC' \(got "Mars\/Olympus"\)/],
  ])('a hand-written route with %o is a TypeError naming the option', (config, message) => {
    const route = task('bad', () => 1, { route: config as object })
    expect(() => make([route])).toThrow(TypeError)
    expect(() => make([route])).toThrow(message)
  })

  it('a task without a POST handler is a TypeError that says what to export', () => {
    expect(() => make([{ path: '/api/x', module: { kind: 'task' } }])).toThrow(
      /Task "x" \(\/api\/x\): a task's handler is its exported POST\(ctx\) function \(got undefined\)/,
    )
  })

  it('an invalid or six-field schedule is a TypeError naming the task', () => {
    expect(() => make([task('cron', () => 1, { schedule: 'every day' })])).toThrow(/Task "cron".*schedule "every day"/)
    expect(() => make([task('cron', () => 1, { schedule: '0 0 0 * * *' })])).toThrow(/five-field/)
  })

  it('an input export that is not a schema is a TypeError', () => {
    expect(() => make([task('in', () => 1, { input: { parse: () => 1 } })])).toThrow(/"input" export must be a Standard Schema/)
    expect(() => make([task('in', () => 1, { input: v.string() })])).not.toThrow()
  })

  it('two routes with the same task name are an error naming both', () => {
    expect(() => make([task('a.b', () => 1), { path: '/api/a/b/', module: { kind: 'task', POST: () => 1 } }])).toThrow(
      /"a\.b" is already used by \/api\/a\/b/,
    )
  })
})

// A schedule is a standard five-field cron expression. croner also reads
// nicknames such as @daily; the scanner refuses them, and a hand-written route
// given to the runtime is held to the same rule, or one app would schedule
// differently depending on how its routes were loaded.
describe('schedule forms the runtime accepts', () => {
  const define = (schedule: string) => () => createTaskRuntime({ routes: [task('tick', () => 1, { schedule })], env: {} })
  const scanned = (schedule: string) =>
    scanRouteSource(
      'src/api/tick.ts',
      `export const route = { kind: 'task' }\nexport const schedule = '${schedule}'\nexport async function POST() {}\n`,
    )

  it.each(['@daily', '@hourly', '@weekly', '@monthly', '@reboot'])(
    '%s is refused as not five fields, as the scanner does',
    async (schedule) => {
      const message = `schedule "${schedule}" must be a five-field cron expression (minute hour day-of-month month day-of-week), got 1 field`
      expect(define(schedule)).toThrow(`Task "tick" (/api/tick): ${message}`)
      expect((await scanned(schedule)).errors.map((e) => e.message)).toEqual([message])
    },
  )

  it('five fields with extra whitespace are accepted and normalized', async () => {
    const rt = define(' 0\t0  * * 1 ')()
    expect(rt.tasks.get('tick')?.schedule).toBe('0 0 * * 1')
    await rt.close()
  })

  it('a schedule that never fires is refused, as the scanner does', async () => {
    const message = 'schedule "0 0 31 2 *" never fires: no date matches it'
    expect(define('0 0 31 2 *')).toThrow(`Task "tick" (/api/tick): ${message}`)
    expect((await scanned('0 0 31 2 *')).errors.map((e) => e.message)).toEqual([message])
  })
})
