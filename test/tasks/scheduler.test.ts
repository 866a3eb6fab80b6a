import { Cron } from 'croner'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CronClock, CronTicks } from '../../src/runtime/tasks/definitions/cron-clock.ts'
import { cronOptions, cronerClock } from '../../src/runtime/tasks/schedule/croner-clock.ts'
import { createSharedRuntime as createEdgeRuntime } from '../../src/runtime/tasks/runtime.ts'
import { TaskEngine } from '../../src/runtime/tasks/engine/engine.ts'
import { MemoryRunStore, createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import { TaskScheduler } from '../../src/runtime/tasks/schedule/scheduler.ts'
import { recordingLogger, runtime, sleep, task } from './_helpers.ts'

describe('in-process scheduler', () => {
  it('starts one job per scheduled task only when asked, and stops them', () => {
    const rt = runtime([
      task('nightly', () => 1, { schedule: '0 3 * * *' }),
      task('hourly', () => 1, { route: { schedule: '0 * * * *' } }),
      task('manual', () => 1),
    ])
    // The next tick is known before the scheduler starts: an external scheduler may fire it.
    expect(rt.scheduledJobs().map((j) => [j.task, j.inProcess, new Date(j.nextRun!).getUTCMinutes()])).toEqual([
      ['nightly', false, 0],
      ['hourly', false, 0],
    ])
    rt.startScheduler()
    const jobs = rt.scheduledJobs()
    expect(jobs.map((j) => [j.task, j.inProcess])).toEqual([
      ['nightly', true],
      ['hourly', true],
    ])
    for (const job of jobs) expect(Date.parse(job.nextRun!)).toBeGreaterThan(Date.now())
    rt.stopScheduler()
    expect(rt.scheduledJobs().some((j) => j.inProcess)).toBe(false)
  })

  it.each(['1', 'true', 'TRUE'])('SVC_DISABLE_IN_PROCESS_CRON=%s turns it off', (value) => {
    const rt = runtime([task('nightly', () => 1, { schedule: '0 3 * * *' })], {
      env: { SVC_DISABLE_IN_PROCESS_CRON: value },
    })
    rt.startScheduler()
    expect(rt.scheduledJobs()[0].inProcess).toBe(false)
    expect(rt.logger.text('info')).toContain('in-process cron is off (SVC_DISABLE_IN_PROCESS_CRON)')
  })

  it('SVC_DISABLE_IN_PROCESS_CRON=0 leaves it on', () => {
    const rt = runtime([task('nightly', () => 1, { schedule: '0 3 * * *' })], { env: { SVC_DISABLE_IN_PROCESS_CRON: '0' } })
    rt.startScheduler()
    expect(rt.scheduledJobs()[0].inProcess).toBe(true)
  })

  it('reads the schedule in the route timezone, UTC by default', () => {
    const rt = runtime([
      task('utc', () => 1, { schedule: '0 9 * * *' }),
      task('ny', () => 1, { schedule: '0 9 * * *', route: { timezone: 'America/New_York' } }),
    ])
    rt.startScheduler()
    const [utc, ny] = rt.scheduledJobs()
    expect(utc.timezone).toBe('UTC')
    expect(new Date(utc.nextRun!).getUTCHours()).toBe(9)
    expect(ny.timezone).toBe('America/New_York')
    const nyHour = new Date(ny.nextRun!).getUTCHours()
    expect([13, 14]).toContain(nyHour) // 09:00 EDT or EST
  })

  it('uses Vixie-cron day-of-month OR day-of-week semantics', () => {
    const job = new Cron('0 0 13 * 5', cronOptions(null))
    const days = job.nextRuns(6, new Date('2026-02-01T00:00:00Z')).map((d) => d.toISOString().slice(0, 10))
    // Every Friday (the 13th of February 2026 is one).
    expect(days).toEqual(['2026-02-06', '2026-02-13', '2026-02-20', '2026-02-27', '2026-03-06', '2026-03-13'])
    // The 13th of May 2026 is a Wednesday: it fires on the day-of-month alone.
    const may = new Cron('0 0 13 * 5', cronOptions(null)).nextRuns(3, new Date('2026-04-30T12:00:00Z'))
    expect(may.map((d) => d.toISOString().slice(0, 10))).toEqual(['2026-05-01', '2026-05-08', '2026-05-13'])
  })

  it('a croner tick fires the task with { _cron: true }', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: new Date('2026-03-02T10:03:00Z') })
    const inputs: unknown[] = []
    const store = new MemoryRunStore()
    const logger = recordingLogger()
    const rt = createTaskRuntime({
      routes: [task('tick', (ctx) => inputs.push(ctx.input), { schedule: '*/5 * * * *' })],
      store,
      logger,
      env: {},
    })
    const engine = new TaskEngine({ store, tasks: rt.tasks, logger, unrefTimers: false })
    const scheduler = new TaskScheduler({
      tasks: rt.tasks,
      logger,
      clock: cronerClock,
      unref: false,
      fire: (name, tick) => engine.fireScheduled(name, tick),
    })
    scheduler.start({})
    // croner's own timer, moved past 10:05.
    await vi.advanceTimersByTimeAsync(2 * 60_000 + 1_000)
    vi.useRealTimers()
    scheduler.stop()
    const [run] = await store.listRuns({ taskName: 'tick' })
    await engine.waitForRun(run.id)
    expect(run.trigger).toBe('cron')
    expect(inputs).toEqual([{ _cron: true }])
    engine.close()
    await rt.close()
  })
  it('hands every tick to its fire callback with the task name and the instant the tick stands for', async () => {
    const rt = runtime([
      task('a', () => 1, { schedule: '*/5 * * * *' }),
      task('b', () => 1, { schedule: '*/5 * * * *' }),
      task('manual', () => 1),
    ])
    const ticks: Array<[string, Date]> = []
    const clock = manualClock()
    const scheduler = new TaskScheduler({
      tasks: rt.tasks,
      logger: rt.logger,
      clock,
      unref: false,
      fire: async (name, tick) => {
        ticks.push([name, tick])
        return undefined
      },
    })
    scheduler.start({})
    expect(clock.started).toEqual(['*/5 * * * *', '*/5 * * * *'])
    const instant = new Date('2026-03-02T10:05:00Z')
    await clock.tick(0, instant)
    expect(ticks).toEqual([['a', instant]])
    scheduler.stop()
    expect(clock.stopped).toBe(2)
    ticks.length = 0
    // A tick the callback skips starts no run; one event is one instant for every task it fires.
    expect(await scheduler.runScheduled('*/5 * * * *')).toEqual([])
    expect(ticks.map(([name]) => name)).toEqual(['a', 'b'])
    expect(ticks[0][1]).toBeInstanceOf(Date)
    expect(ticks[1][1]).toBe(ticks[0][1])
  })
})

describe('the cron clock', () => {
  it('a runtime without one counts fields only, knows no next tick and refuses to tick in-process', () => {
    const logger = recordingLogger()
    const rt = createEdgeRuntime({ routes: [task('nightly', () => 1, { schedule: '0 0 31 2 *' })], logger, env: {} })
    expect(rt.scheduledJobs()).toEqual([{ task: 'nightly', schedule: '0 0 31 2 *', timezone: 'UTC', nextRun: null, inProcess: false }])
    expect(() => rt.startScheduler()).toThrow(/no cron clock, so it cannot fire nightly in-process.*runScheduled\(cron\)/)
    expect(() => createEdgeRuntime({ routes: [task('bad', () => 1, { schedule: '0 0 * *' })], logger, env: {} })).toThrow(
      /must be a five-field cron expression/,
    )
    return rt.close()
  })

  it("svc's createTaskRuntime reads schedules with croner: one that never fires is refused at start", () => {
    expect(() => createTaskRuntime({ routes: [task('never', () => 1, { schedule: '0 0 31 2 *' })], env: {} })).toThrow(
      'Task "never" (/api/never): schedule "0 0 31 2 *" never fires: no date matches it',
    )
    expect(() => createTaskRuntime({ routes: [task('bad', () => 1, { schedule: '61 * * * *' })], env: {} })).toThrow(
      /schedule "61 \* \* \* \*" is not a valid cron expression/,
    )
  })

  it('rejects a cron option that is not a clock', () => {
    expect(() => createTaskRuntime({ routes: [], cron: {} as CronClock })).toThrow(/cron must be a cron clock such as cronerClock \(got/)
  })
})

describe('runScheduled and the overlap guard', () => {
  it('fires every task whose schedule is exactly the cron, whitespace aside', async () => {
    const rt = runtime([
      task('a', () => 'a', { schedule: '*/15 * * * *' }),
      task('b', () => 'b', { schedule: '*/15  *  * * *' }),
      task('c', () => 'c', { schedule: '0 0 * * *' }),
    ])
    const runs = await rt.runScheduled(' */15 * * * * ')
    expect(runs.map((r) => r.taskName).sort()).toEqual(['a', 'b'])
    expect(runs.every((r) => r.trigger === 'cron')).toBe(true)
    expect(await rt.runScheduled('1 1 1 1 1')).toEqual([])
    expect(rt.logger.text('warn')).toContain('no task has this schedule')
    expect(rt.logger.text('warn')).not.toContain('named no schedule')
    // What wrangler dev's bare /cdn-cgi/local/scheduled sends: the warning says how to name one.
    expect(await rt.runScheduled('')).toEqual([])
    expect(rt.logger.text('warn')).toContain('/cdn-cgi/local/scheduled?cron=0+6+*+*+*')
  })

  it('with a time zone, fires only the tasks whose schedule is read in that zone', async () => {
    const rt = runtime([
      task('utc', () => 'utc', { schedule: '0 9 * * *' }),
      task('paris', () => 'paris', { schedule: '0 9 * * *', route: { timezone: 'Europe/Paris' } }),
    ])
    expect((await rt.runScheduled('0 9 * * *', 'Europe/Paris')).map((r) => r.taskName)).toEqual(['paris'])
    expect((await rt.runScheduled('0 9 * * *', 'UTC')).map((r) => r.taskName)).toEqual(['utc'])
    await expect(rt.runScheduled('0 9 * * *', 7 as never)).rejects.toThrow('timezone must be a string (got number)')
  })

  it('an event in another zone than the task says the zones differ, naming both', async () => {
    const rt = runtime([
      task('paris', () => 'paris', { schedule: '0 9 * * *', route: { timezone: 'Europe/Paris' } }),
      task('other', () => 'other', { schedule: '0 0 * * *' }),
    ])
    expect(await rt.runScheduled('0  9 * * *', 'America/New_York')).toEqual([])
    expect(rt.logger.text('warn')).toBe(
      '[svc] runScheduled("0  9 * * *", "America/New_York"): the tasks with this schedule read it in another time zone, ' +
        'so none fired: paris (Europe/Paris). The event came for America/New_York',
    )
    expect(await rt.listRuns()).toEqual([])
  })

  it('skips a tick with a warning while the previous scheduled run still runs; manual triggers bypass it', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const rt = runtime([task('report', () => gate, { schedule: '0 * * * *' })])
    const [first] = await rt.runScheduled('0 * * * *')
    expect(await rt.runScheduled('0 * * * *')).toEqual([])
    expect(rt.logger.text('warn')).toContain(
      `scheduled task "report": skipped a tick; the previous scheduled run ${first.id} is still running`,
    )
    const manual = await rt.trigger('report')
    expect(manual.status).toBe('running')
    release()
    await rt.waitForRun(first.id)
    const [next] = await rt.runScheduled('0 * * * *')
    expect(next.id).not.toBe(first.id)
  })

  it('two ticks at once start one run', async () => {
    const rt = runtime([task('report', () => sleep(20), { schedule: '0 * * * *' })])
    const [a, b] = await Promise.all([rt.runScheduled('0 * * * *'), rt.runScheduled('0 * * * *')])
    expect(a.length + b.length).toBe(1)
  })

  it('a failing scheduled run is logged with the task name and recorded', async () => {
    const rt = runtime([
      task(
        'cleanup',
        () => {
          throw new Error('disk full')
        },
        { schedule: '0 4 * * *' },
      ),
    ])
    const [run] = await rt.runScheduled('0 4 * * *')
    const done = await rt.waitForRun(run.id)
    expect(done).toMatchObject({ status: 'failed', ok: false, trigger: 'cron' })
    expect(rt.logger.text('error')).toContain('scheduled task "cleanup" failed after 1 attempt')
    expect(rt.logger.text('error')).toContain('disk full')
  })
})

/** A clock whose ticks the test fires, for the scheduler's own bookkeeping. */
function manualClock() {
  const jobs: CronTicks[] = []
  const started: string[] = []
  let stopped = 0
  const clock: CronClock & { started: string[]; stopped: number; tick(index: number, at: Date): Promise<unknown> } = {
    started,
    get stopped() {
      return stopped
    },
    problem: () => null,
    next: () => null,
    start(expression, _timezone, ticks) {
      started.push(expression)
      jobs.push(ticks)
      return { next: () => null, stop: () => void stopped++ }
    },
    tick: (index, at) => jobs[index].onTick(at),
  }
  return clock
}

afterEach(() => {
  vi.useRealTimers()
})
