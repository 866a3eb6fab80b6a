/**
 * What `svcjs/testing` does on every store it runs on: the memory store
 * (its default), a SQLite file and Postgres each run these cases, with the
 * virtual clock. Each case gets a store of its own from `makeStore`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime, type TestRuntimeOptions } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'

/** A store the contract makes for one case, and closes after it. */
type CaseStore = RunStore & StoreLifecycle
import { backoffDelay } from '../../src/runtime/tasks/base/backoff.ts'
import { BERLIN_WEEK } from './_berlin-week.ts'
import { START, task } from './_kit.ts'

const realNow = Date.now

/** The kit's cases on the stores `makeStore` makes (none: the kit's own memory store). */
export function kitContract(name: string, makeStore?: () => CaseStore | Promise<CaseStore>): void {
  describe(`svcjs/testing on ${name}`, () => {
    let t: TestRuntime | undefined
    const stores: CaseStore[] = []
    const kit = async (options: TestRuntimeOptions) => {
      const store = await makeStore?.()
      if (store) stores.push(store)
      return createTestRuntime(store ? { ...options, store } : options)
    }
    afterEach(async () => {
      await t?.close()
      t = undefined
      await Promise.all(stores.splice(0).map((store) => store.close()))
    })

    it('finishes a 30-day sleep in far less than a second, stamped in virtual time', async () => {
      t = await kit({
        routes: [
          task('month', async (ctx) => {
            // ctx.now() is read again on each replay: a time kept for later is a step's output.
            const before = await ctx.step.run('before', () => ctx.now().toISOString())
            await ctx.step.sleep('wait', 30 * 86_400)
            return { before, after: ctx.now().toISOString() }
          }),
        ],
      })
      const began = realNow()
      const run = await t.run('month')
      expect(realNow() - began).toBeLessThan(1000)
      expect(run).toMatchObject({
        status: 'completed',
        createdAt: '2030-01-01T00:00:00.000Z',
        finishedAt: '2030-01-31T00:00:00.000Z',
        result: { before: '2030-01-01T00:00:00.000Z', after: '2030-01-31T00:00:00.000Z' },
      })
      expect(t.now().toISOString()).toBe('2030-01-31T00:00:00.000Z')
    })

    it('retries with backoff at the instants the backoff gives', async () => {
      let calls = 0
      t = await kit({
        routes: [
          task(
            'flaky',
            () => {
              calls++
              if (calls < 3) throw new Error(`down ${calls}`)
              return { calls }
            },
            { retries: 3 },
          ),
        ],
      })
      const run = await t.trigger('flaky')
      expect(await t.waitingOn(run.id)).toEqual({ kind: 'retry', at: new Date(START + backoffDelay(1)) })
      await t.advance(backoffDelay(1) - 1)
      expect(calls).toBe(1)
      await t.advance(1)
      expect(calls).toBe(2)
      expect(await t.waitingOn(run.id)).toEqual({ kind: 'retry', at: new Date(START + backoffDelay(1) + backoffDelay(2)) })
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: { calls: 3 } })
      expect(t.now().getTime()).toBe(START + backoffDelay(1) + backoffDelay(2))
      expect(t.logs.filter((entry) => entry.level === 'warn')).toHaveLength(2)
    })

    it('times a token wait out exactly at its instant', async () => {
      t = await kit({ routes: [task('approve', (ctx) => ctx.step.waitForToken('ok', { timeoutSeconds: 3600 }))] })
      const run = await t.trigger('approve')
      const waiting = await t.waitingOn(run.id)
      expect(waiting).toMatchObject({ kind: 'token', step: 'ok', timeoutAt: new Date(START + 3_600_000) })
      await t.advance(3_600_000 - 1)
      expect((await t.getRun(run.id))!.status).toBe('suspended')
      await t.advance(1)
      expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: { timedOut: true } })
    })

    it('fires a schedule once per tick over a week, in its time zone, across a change of daylight saving time', async () => {
      t = await kit({
        start: BERLIN_WEEK.start,
        routes: [
          task('report', (ctx) => ({ at: ctx.now().toISOString() }), { schedule: BERLIN_WEEK.cron, timezone: BERLIN_WEEK.timezone }),
        ],
      })
      await t.advance('7d')
      const runs = await t.runs({ task: 'report' })
      expect(runs.map((run) => (run.result as { at: string }).at).sort()).toEqual(BERLIN_WEEK.ticks)
      expect(runs.every((run) => run.trigger === 'cron' && run.status === 'completed')).toBe(true)
    })

    it('meets a wait with lookback with an event sent before it', async () => {
      t = await kit({
        routes: [
          task('fulfil', async (ctx) => {
            await ctx.step.sleep('first', 60)
            return ctx.step.waitForEvent('paid', 'order.paid', {
              match: { orderId: ctx.input.orderId },
              lookbackSeconds: 300,
              timeoutSeconds: 3600,
            })
          }),
        ],
      })
      const run = await t.trigger('fulfil', { orderId: 'o-1' })
      await t.sendEvent('order.paid', { orderId: 'o-1' }, { id: 'evt-1' })
      await t.advance('1m')
      expect(await t.getRun(run.id)).toMatchObject({
        status: 'completed',
        result: { event: { id: 'evt-1', name: 'order.paid', data: { orderId: 'o-1' }, time: '2030-01-01T00:00:00.000Z' } },
      })
    })

    it("replaces a step's function, records its output as a step, and counts real calls apart from replays", async () => {
      const sent: string[] = []
      t = await kit({
        routes: [
          task('welcome', async (ctx) => {
            const receipt = await ctx.step.run('email', async () => {
              sent.push(ctx.input.to)
              return { id: 'real' }
            })
            await ctx.step.sleep('settle', 60)
            return receipt
          }),
        ],
      })
      t.mockStep('welcome', 'email', ({ input }) => ({ id: `mocked for ${(input as { to: string }).to}` }))
      const run = await t.run('welcome', { to: 'ada@example.com' })
      expect(run.result).toEqual({ id: 'mocked for ada@example.com' })
      expect(run.steps.email).toMatchObject({ status: 'completed', output: { id: 'mocked for ada@example.com' } })
      expect(sent).toEqual([])
      // The handler ran twice (before and after the sleep); the step's function once.
      expect(t.stepCalls('welcome', 'email')).toBe(1)
      expect(() => t!.mockStep('welcom', 'email', {})).toThrow('t.mockStep("welcom"): no task has this name; the tasks are welcome')
    })

    describe('deploys', () => {
      const notify = (how: 'v1' | 'patched' | 'deprecated') =>
        task('notify', async (ctx) => {
          let sent: string
          if (how === 'v1') sent = await ctx.step.run('email', () => 'email')
          else if (how === 'deprecated') {
            await ctx.deprecatePatch('by-sms')
            sent = await ctx.step.run('sms', () => 'sms')
          } else sent = (await ctx.patched('by-sms')) ? await ctx.step.run('sms', () => 'sms') : await ctx.step.run('email', () => 'email')
          await ctx.step.sleep('wait', 86_400)
          return sent
        })

      it('replays a run asleep across a deploy on the new code, where a patch tells it from the runs that start there', async () => {
        t = await kit({ routes: [notify('v1')] })
        const before = await t.trigger('notify')
        await t.advance('1h')
        await t.deploy({ routes: [notify('patched')] })
        const after = await t.trigger('notify')
        await t.advanceUntilIdle()
        expect(await t.getRun(before.id)).toMatchObject({ status: 'completed', result: 'email' })
        expect(await t.getRun(after.id)).toMatchObject({ status: 'completed', result: 'sms' })
        expect([t.stepCalls('notify', 'email'), t.stepCalls('notify', 'sms')]).toEqual([1, 1])
      })

      it('fails a run that went the old way once the patch is deprecated, as production does', async () => {
        t = await kit({ routes: [notify('v1')] })
        const before = await t.trigger('notify')
        await t.deploy({ routes: [notify('deprecated')] })
        await t.advanceUntilIdle()
        const run = await t.getRun(before.id)
        expect(run?.status).toBe('failed')
        expect(run?.attempts.at(-1)?.error).toContain('This run passed patch "by-sms" on its old branch, which this code no longer has')
      })
    })
  })
}
