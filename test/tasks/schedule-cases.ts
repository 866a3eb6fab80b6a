/**
 * Runtime schedules (`TaskRuntime.schedules`): made, changed, paused and
 * removed without a deploy; each tick starts one run with the tick and
 * the schedule's id on it; a paused one starts none; idempotent by key;
 * `trigger` runs now and `backfill` once per missed tick. Driven by
 * svcjs/testing on the virtual clock; schedules.test.ts runs these on
 * memory and SQLite, test/postgres/schedules.test.ts on Postgres.
 */
import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import type { SchedulesApi } from '../../src/types.ts'
import { START, task } from '../testing/_kit.ts'

const ROUTES = [
  {
    ...task('reports.send', (ctx) => ({ tenant: ctx.input.tenant, at: ctx.now().toISOString() })),
    module: {
      route: { kind: 'task' },
      input: v.object({ tenant: v.string() }),
      POST: (ctx: { input: { tenant: string }; now(): Date }) => ({ tenant: ctx.input.tenant, at: ctx.now().toISOString() }),
    },
  },
]

const iso = (ms: number) => new Date(ms).toISOString()
const HOUR = 3_600_000

/** The cases, each on a store `makeStore` makes for it (none: the kit's memory store), closed after it. */
export function scheduleCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`runtime schedules, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    let schedules: SchedulesApi
    afterEach(async () => {
      await t.close()
      await store?.close()
    })
    const start = async () => {
      store = await makeStore?.()
      t = await createTestRuntime({ routes: ROUTES as never, ...(store ? { store } : {}) })
      schedules = t.runtime.schedules!
    }
    const runsOf = async () => (await t.runs({ task: 'reports.send' })).reverse()

    it('starts one run per tick, with the tick and the schedule on it, and its input', async () => {
      await start()
      const made = await schedules.create({ task: 'reports.send', cron: '0 * * * *', input: { tenant: 'acme' } })
      expect(made).toMatchObject({ task: 'reports.send', cron: '0 * * * *', timezone: null, enabled: true, nextAt: iso(START + HOUR) })
      await t.advance('3h')
      const runs = await runsOf()
      expect(runs.map((run) => run.schedule)).toEqual([1, 2, 3].map((n) => ({ id: made.id, tick: iso(START + n * HOUR) })))
      expect(runs.map((run) => [run.trigger, run.status, run.result])).toEqual(
        [1, 2, 3].map((n) => ['cron', 'completed', { tenant: 'acme', at: iso(START + n * HOUR) }]),
      )
      expect(await schedules.get(made.id)).toMatchObject({
        nextAt: iso(START + 4 * HOUR),
        lastTick: iso(START + 3 * HOUR),
        lastRunId: runs[2].id,
      })
    })

    it('a paused schedule starts nothing and shows no next tick; resumed, it goes on from now', async () => {
      await start()
      const made = await schedules.create({ task: 'reports.send', cron: '0 * * * *', input: { tenant: 'acme' } })
      expect(await schedules.pause(made.id)).toMatchObject({ enabled: false, nextAt: null })
      await t.advance('5h')
      expect(await runsOf()).toEqual([])
      expect(await schedules.resume(made.id)).toMatchObject({ enabled: true, nextAt: iso(START + 6 * HOUR) })
      await t.advance('1h')
      expect((await runsOf()).map((run) => run.schedule?.tick)).toEqual([iso(START + 6 * HOUR)])
    })

    it('is idempotent by task and key: a second create updates the first, and lists find it by key', async () => {
      await start()
      const first = await schedules.create({ task: 'reports.send', cron: '0 * * * *', input: { tenant: 'acme' }, key: 'acme' })
      const again = await schedules.create({ task: 'reports.send', cron: '30 * * * *', input: { tenant: 'acme' }, key: 'acme' })
      const other = await schedules.create({ task: 'reports.send', cron: '0 0 * * *', input: { tenant: 'globex' }, key: 'globex' })
      expect(again).toMatchObject({ id: first.id, cron: '30 * * * *', nextAt: iso(START + HOUR / 2), createdAt: first.createdAt })
      expect((await schedules.list()).map((s) => s.id)).toEqual([first.id, other.id])
      expect((await schedules.list({ key: 'globex' })).map((s) => s.id)).toEqual([other.id])
      expect(await schedules.list({ task: 'nope' })).toEqual([])
      await t.advance('1h')
      // The first schedule ticks at :30 only now; the other not before midnight.
      expect((await runsOf()).map((run) => run.schedule)).toEqual([{ id: first.id, tick: iso(START + HOUR / 2) }])
    })

    it('update changes the cron, time zone and input; delete stops it and keeps its runs', async () => {
      await start()
      const made = await schedules.create({ task: 'reports.send', cron: '0 9 * * *', input: { tenant: 'acme' } })
      expect(made.nextAt).toBe(iso(START + 9 * HOUR))
      const moved = await schedules.update(made.id, { timezone: 'America/New_York', input: { tenant: 'initech' } })
      // 09:00 in New York is 14:00 UTC in January.
      expect(moved).toMatchObject({ timezone: 'America/New_York', nextAt: iso(START + 14 * HOUR), input: { tenant: 'initech' } })
      await t.advance('15h')
      expect((await runsOf()).map((run) => run.result)).toEqual([{ tenant: 'initech', at: iso(START + 14 * HOUR) }])
      expect(await schedules.delete(made.id)).toBe(true)
      expect(await schedules.delete(made.id)).toBe(false)
      await t.advance('2d')
      expect(await runsOf()).toHaveLength(1)
      await expect(schedules.pause(made.id)).rejects.toMatchObject({ code: 'SCHEDULE_NOT_FOUND', status: 404 })
    })

    it('trigger runs now; backfill starts one run per tick in the range, once however often it is asked', async () => {
      await start()
      const made = await schedules.create({ task: 'reports.send', cron: '0 */6 * * *', input: { tenant: 'acme' }, enabled: false })
      const now = await schedules.trigger(made.id)
      expect(now.tick).toBe(iso(START))
      const from = iso(START - 24 * HOUR)
      const ticks = await schedules.backfill(made.id, from, iso(START))
      expect(ticks.map((tick) => tick.tick)).toEqual([0, 6, 12, 18].map((h) => iso(START - 24 * HOUR + h * HOUR)))
      // Asked again, the same ticks answer with the same runs.
      expect(await schedules.backfill(made.id, from, iso(START))).toEqual(ticks)
      await t.runUntilIdle()
      expect(await runsOf()).toHaveLength(5)
      await expect(schedules.backfill(made.id, iso(START - 365 * 24 * HOUR), iso(START))).rejects.toThrow(
        `schedules.backfill("${made.id}"): the range holds more than 1000 ticks; backfill it in parts`,
      )
    })

    it('refuses a bad schedule before keeping anything, naming the fix', async () => {
      await start()
      await expect(schedules.create({ task: 'reports.sned', cron: '0 * * * *' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' })
      await expect(schedules.create({ task: 'reports.send', cron: 'hourly', input: { tenant: 'a' } })).rejects.toThrow(
        'schedules.create(): cron "hourly" must be a five-field cron expression',
      )
      await expect(
        schedules.create({ task: 'reports.send', cron: '0 * * * *', timezone: 'Mars/Base', input: { tenant: 'a' } }),
      ).rejects.toThrow("schedules.create(): timezone must be an IANA time zone such as 'Europe/Berlin' or 'UTC' (got \"Mars/Base\")")
      await expect(schedules.create({ task: 'reports.send', cron: '0 * * * *', input: { tenant: 1 } })).rejects.toMatchObject({
        code: 'VALIDATION_FAILED',
      })
      await expect(schedules.create({ task: 'reports.send', cron: '0 * * * *', inputs: {} } as never)).rejects.toThrow(
        'schedules.create(): a schedule has no field "inputs"; its fields are task, key, cron, timezone, input, enabled',
      )
      expect(await schedules.list()).toEqual([])
    })
  })
}
