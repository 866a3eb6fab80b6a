/**
 * Replay from a step (`TaskRuntime.replay(id, { fromStep })`): the new run
 * starts with the steps recorded before `fromStep`, which return their
 * outputs without running, and runs the rest anew on the current code; a
 * key the run did not record is refused, naming the keys it did. Driven by
 * svcjs/testing; replay-from.test.ts runs these on memory and SQLite,
 * test/postgres/replay-from.test.ts on Postgres.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import { task } from '../testing/_kit.ts'

/** Three steps around a sleep; `send-tips` fails until `fixed`. */
function onboarding(state: { fixed: boolean }) {
  return [
    task('onboard', async (ctx) => {
      const account = await ctx.step.run('create-account', () => ({ id: `acct-${ctx.input.email}` }))
      await ctx.step.run('send-welcome', () => ({ to: ctx.input.email }))
      await ctx.step.sleep('wait-a-day', 86_400)
      const tips = await ctx.step.run('send-tips', () => {
        if (!state.fixed) throw new Error('the tips template is broken')
        return { sent: true }
      })
      return { account: account.id, tips }
    }),
  ]
}

/** The cases, each on a store `makeStore` makes for it (none: the kit's memory store), closed after it. */
export function replayFromCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`replay from a step, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    const state = { fixed: false }
    afterEach(async () => {
      await t.close()
      await store?.close()
      state.fixed = false
    })
    const start = async () => {
      store = await makeStore?.()
      t = await createTestRuntime({ routes: onboarding(state), ...(store ? { store } : {}) })
    }

    it('from the step it failed at, keeps every step before it, which do not run again, and runs the rest on the fixed code', async () => {
      await start()
      const failed = await t.run('onboard', { email: 'ada@example.com' })
      expect(failed.status).toBe('failed')
      expect(Object.keys(failed.steps)).toEqual(['create-account', 'send-welcome', 'wait-a-day'])
      // Never recorded, it is the step its failed attempt names.
      expect(failed.attempts.at(-1)).toMatchObject({ step: 'send-tips', error: 'the tips template is broken' })
      state.fixed = true

      const replay = await t.replay(failed.id, { fromStep: 'send-tips' })
      await t.advanceUntilIdle()
      const done = await t.getRun(replay.id)
      expect(done).toMatchObject({
        status: 'completed',
        trigger: 'replay',
        replayOf: failed.id,
        result: { account: 'acct-ada@example.com', tips: { sent: true } },
      })
      // The kept steps, sleep included, returned their records: no second account, welcome or day.
      expect(t.stepCalls('onboard', 'create-account')).toBe(1)
      expect(t.stepCalls('onboard', 'send-welcome')).toBe(1)
      expect(done?.steps['create-account']).toEqual(failed.steps['create-account'])
      expect(Date.parse(done!.finishedAt!) - Date.parse(done!.createdAt)).toBe(0)
    })

    it('from an earlier step, runs that step and those after it again', async () => {
      await start()
      state.fixed = true
      const first = await t.run('onboard', { email: 'ada@example.com' })
      const again = await t.replay(first.id, { fromStep: 'send-welcome' })
      await t.advanceUntilIdle()
      expect(await t.getRun(again.id)).toMatchObject({ status: 'completed' })
      expect([t.stepCalls('onboard', 'create-account'), t.stepCalls('onboard', 'send-welcome')]).toEqual([1, 2])
    })

    it("takes an input in place of the run's", async () => {
      await start()
      state.fixed = true
      const first = await t.run('onboard', { email: 'ada@example.com' })
      const other = await t.replay(first.id, { input: { email: 'grace@example.com' } })
      await t.advanceUntilIdle()
      expect(await t.getRun(other.id)).toMatchObject({
        status: 'completed',
        input: { email: 'grace@example.com' },
        result: { account: 'acct-grace@example.com' },
      })
    })

    it('refuses a step the run did not record, naming those it did', async () => {
      await start()
      const failed = await t.run('onboard', { email: 'ada@example.com' })
      await expect(t.replay(failed.id, { fromStep: 'send-tip' })).rejects.toMatchObject({
        code: 'STEP_NOT_RECORDED',
        status: 400,
        message: `Run "${failed.id}" has no step "send-tip" to replay from: it can be replayed from "create-account", "send-welcome", "wait-a-day", "send-tips"`,
      })
      expect(await t.runs({ task: 'onboard' })).toHaveLength(1)
    })
  })
}
