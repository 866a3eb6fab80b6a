/**
 * The virtual clock of `svcjs/testing` and the cron clock that ticks on it:
 * timers fire in the order of their instants, then of their setting, and
 * only when told to; a schedule ticks at the instants it names, in its time
 * zone, across a change of daylight saving time.
 */
import { describe, expect, it } from 'vitest'
import { clockedCron } from '../../src/runtime/tasks/schedule/clocked-cron.ts'
import { cronerClock } from '../../src/runtime/tasks/schedule/croner-clock.ts'
import { VirtualClock } from '../../src/testing/virtual-clock.ts'
import { BERLIN_WEEK } from './_berlin-week.ts'

const START = Date.parse('2001-01-01T00:00:00Z')

describe('VirtualClock', () => {
  it('fires timers by instant, then in the order they were set, one at a time, and only up to the instant given', () => {
    const clock = new VirtualClock(START)
    const fired: string[] = []
    clock.setTimer(() => fired.push('c@30'), 30, false)
    clock.setTimer(() => fired.push('a@10'), 10, false)
    clock.setTimer(() => fired.push('b@10'), 10, false)
    const cleared = clock.setTimer(() => fired.push('cleared@5'), 5, false)
    clock.clearTimer(cleared)
    expect(clock.pending).toBe(3)
    expect(clock.nextDue()).toBe(START + 10)

    expect(clock.fireNext(START + 20)).toBe(true)
    expect(fired).toEqual(['a@10'])
    expect(clock.now()).toBe(START + 10)
    expect(clock.fireNext(START + 20)).toBe(true)
    // Not due by the instant given: nothing fires, and the time stays.
    expect(clock.fireNext(START + 20)).toBe(false)
    expect(fired).toEqual(['a@10', 'b@10'])
    expect(clock.now()).toBe(START + 10)
    clock.moveTo(START + 20)
    expect(clock.now()).toBe(START + 20)
    // A timer set from another runs after the ones already due at its instant.
    clock.setTimer(() => fired.push('d@25'), 5, false)
    expect(clock.fireNext(Number.POSITIVE_INFINITY)).toBe(true)
    expect(clock.fireNext(Number.POSITIVE_INFINITY)).toBe(true)
    expect(fired).toEqual(['a@10', 'b@10', 'd@25', 'c@30'])
    expect(clock.nextDue()).toBeUndefined()
    // Time never goes back.
    clock.moveTo(START)
    expect(clock.now()).toBe(START + 30)
  })

  it('refuses a start that is not a time', () => {
    expect(() => new VirtualClock(Number.NaN)).toThrow('the start must be a time in epoch milliseconds (got NaN)')
  })
})

describe('clockedCron', () => {
  /** Runs the clock to `until`, settling each tick's promise before the next. */
  async function runTo(clock: VirtualClock, until: number): Promise<void> {
    while (clock.fireNext(until)) await new Promise((resolve) => setImmediate(resolve))
    clock.moveTo(until)
  }

  it('ticks at each instant a schedule names, in its time zone, across a change of daylight saving time', async () => {
    const clock = new VirtualClock(Date.parse(BERLIN_WEEK.start))
    const cron = clockedCron(clock, cronerClock)
    const ticks: string[] = []
    const job = cron.start(BERLIN_WEEK.cron, BERLIN_WEEK.timezone, {
      unref: false,
      onTick: async (tick) => ticks.push(tick.toISOString()),
      onError: () => {},
    })
    expect(job.next()?.toISOString()).toBe(BERLIN_WEEK.ticks[0])
    await runTo(clock, Date.parse('2026-04-01T12:00:00Z'))
    expect(ticks).toEqual(BERLIN_WEEK.ticks)
    expect(cron.next('0 9 * * *', 'Europe/Berlin')?.toISOString()).toBe('2026-04-02T07:00:00.000Z')
    job.stop()
    expect(job.next()).toBeNull()
    await runTo(clock, Date.parse('2026-04-03T12:00:00Z'))
    expect(ticks).toHaveLength(7)
    expect(clock.pending).toBe(0)
  })

  it('hands a failed tick to onError and keeps ticking', async () => {
    const clock = new VirtualClock(START)
    const errors: unknown[] = []
    let calls = 0
    const job = clockedCron(clock, cronerClock).start('*/5 * * * *', null, {
      unref: false,
      onTick: async () => {
        calls++
        throw new Error(`tick ${calls} failed`)
      },
      onError: (error) => errors.push(error),
    })
    await runTo(clock, START + 15 * 60_000)
    expect(calls).toBe(3)
    expect(errors.map((error) => (error as Error).message)).toEqual(['tick 1 failed', 'tick 2 failed', 'tick 3 failed'])
    job.stop()
  })

  it('waits in steps for a tick further off than a system timer takes', async () => {
    const clock = new VirtualClock(Date.parse('2026-01-02T00:00:00Z'))
    const ticks: string[] = []
    // Once a year, on 1 January: about 364 days off, past 2^31 ms (24.8 days).
    const job = clockedCron(clock, cronerClock).start('0 0 1 1 *', null, {
      unref: false,
      onTick: async (tick) => ticks.push(tick.toISOString()),
      onError: () => {},
    })
    await runTo(clock, Date.parse('2027-01-01T00:00:00Z'))
    expect(ticks).toEqual(['2027-01-01T00:00:00.000Z'])
    job.stop()
  })
})
