import { describe, expect, it } from 'vitest'
import * as v from 'valibot'
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
      { name: 'jobs.notify', path: '/api/jobs/notify', schedule: null, retries: 2, timeout: 500, lastRun: null },
      { name: 'report', path: '/api/report', schedule: null, retries: 0, timeout: 30000, lastRun: null },
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
    expect(() =>
      make([task('a.b', () => 1), { path: '/api/a/b/', module: { kind: 'task', POST: () => 1 } }]),
    ).toThrow(/"a\.b" is already used by \/api\/a\/b/)
  })
})
