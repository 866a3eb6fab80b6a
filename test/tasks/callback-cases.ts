/**
 * Callback URLs as a task sees them (`ctx.step.createCallback`), driven by
 * svcjs/testing on a virtual clock: the same URL on every replay, a
 * request kept before the wait, `wait()` answered by the request or by its
 * timeout. callbacks.test.ts runs these on memory and SQLite,
 * test/postgres/callbacks.test.ts on Postgres; test/http/callbacks.test.ts
 * sends the requests over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import { task } from '../testing/_kit.ts'

export function callbackCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`callback URLs, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    const handedOut: string[] = []
    afterEach(async () => {
      await t.close()
      await store?.close()
      handedOut.length = 0
    })
    const start = async () => {
      store = await makeStore?.()
      const routes = [
        task('refunds.wait', async (ctx) => {
          const callback = await ctx.step.createCallback('refunded', { timeoutSeconds: 3600 })
          handedOut.push(callback.url)
          await ctx.step.sleep('settle', 60)
          return callback.wait()
        }),
      ]
      t = await createTestRuntime({ routes, ...(store ? { store } : {}) })
    }

    it('answers wait() with the request, even one kept before the run waited, and hands out one URL on every replay', async () => {
      await start()
      const run = await t.trigger('refunds.wait', {})
      await t.runUntilIdle()
      expect(handedOut).toHaveLength(1)
      expect(handedOut[0]).toMatch(/^http:\/\/localhost:3000\/__tasks\/callbacks\/cb1\./)
      // The run sleeps; the request comes first.
      const id = `${run.id}:refunded`
      expect(await t.completeToken(id, { method: 'POST', body: { ok: 1 }, headers: {}, receivedAt: t.now().toISOString() })).toBe(
        'completed',
      )
      await t.advance('1m')
      await t.advanceUntilIdle()
      const done = await t.getRun(run.id)
      expect(done).toMatchObject({ status: 'completed', result: { method: 'POST', body: { ok: 1 } } })
      expect(new Set(handedOut).size).toBe(1)
      expect(handedOut.length).toBeGreaterThan(1)
    })

    it('answers wait() with { timedOut: true } once its time is over', async () => {
      await start()
      const run = await t.trigger('refunds.wait', {})
      await t.advance('1m')
      await t.runUntilIdle()
      // The wait says it is a callback's, to the kit as to the dashboard and the CLI.
      expect(await t.waitingOn(run.id)).toMatchObject({ kind: 'token', step: 'refunded', callback: true })
      expect((await t.getRun(run.id))?.suspended?.waitpoint).toMatchObject({ type: 'token', callback: true })
      await t.advance('2h')
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: { timedOut: true } })
    })
  })
}
