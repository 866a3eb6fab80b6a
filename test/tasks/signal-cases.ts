/**
 * Signals as a task sees them (`ctx.step.waitForSignal`, `ctx.signals`,
 * `sendSignal`), driven by svcjs/testing on a virtual clock: a signal meets
 * a wait open now or the next one, in the order sent, each once; a wait
 * that timed out takes none; an id sent again is kept once; a finished or
 * unknown run, a bad name and a full run are refused, keeping nothing.
 * signals.test.ts runs these on memory and SQLite,
 * test/postgres/signals.test.ts on Postgres; test/http/signals.test.ts
 * sends them over HTTP.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import { MAX_WAITING_SIGNALS } from '../../src/runtime/tasks/store/signal-records.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import type { ReceivedSignal } from '../../src/types.ts'
import { task } from '../testing/_kit.ts'

export function signalCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`signals, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    const approvals: unknown[] = []
    afterEach(async () => {
      await t.close()
      await store?.close()
      approvals.length = 0
    })
    const start = async () => {
      store = await makeStore?.()
      const routes = [
        // Waits for an approval, then sleeps: its replays after the sleep must not take another signal.
        task('orders.approve', async (ctx) => {
          const decision = await ctx.step.waitForSignal<{ ok: boolean }>('approval', 'approval', { timeoutSeconds: 3600 })
          approvals.push(decision)
          await ctx.step.sleep('settle', 60)
          const second = await ctx.step.waitForSignal('again', 'approval', { timeoutSeconds: 60 })
          return { decision, second }
        }),
        // Reads messages in order until "bye", after a minute's pause.
        task('chat.session', async (ctx) => {
          await ctx.step.sleep('pause', 60)
          const seen: unknown[] = []
          for await (const message of ctx.signals<string>('message')) {
            seen.push(message.data)
            if (message.data === 'bye') break
          }
          return seen
        }),
        // Two waits at once, on two names.
        task('trip.both', async (ctx) => {
          const [a, b] = await Promise.all([ctx.step.waitForSignal('a', 'flight'), ctx.step.waitForSignal('b', 'hotel')])
          return [(a as ReceivedSignal).data, (b as ReceivedSignal).data]
        }),
      ]
      t = await createTestRuntime({ routes, ...(store ? { store } : {}) })
    }

    it('resumes a waiting run with the signal, and its replays take no other', async () => {
      await start()
      const run = await t.trigger('orders.approve', {})
      await t.runUntilIdle()
      expect(await t.waitingOn(run.id)).toMatchObject({ kind: 'signal', step: 'approval', name: 'approval' })
      const sent = await t.sendSignal(run.id, 'approval', { ok: true }, { id: 'first' })
      expect(sent).toEqual({ id: 'first', runId: run.id, name: 'approval', duplicate: false })
      // Sent while the run sleeps: kept for the second wait, not taken by a replay of the first.
      await t.sendSignal(run.id, 'approval', { ok: false }, { id: 'second' })
      await t.advance('1m')
      await t.advanceUntilIdle()
      const done = await t.getRun(run.id)
      expect(done).toMatchObject({
        status: 'completed',
        result: { decision: { id: 'first', name: 'approval', data: { ok: true } }, second: { id: 'second', data: { ok: false } } },
      })
      expect(done?.steps.approval).toMatchObject({ status: 'completed', kind: 'waitForSignal' })
      expect(approvals.every((decision) => (decision as ReceivedSignal).id === 'first')).toBe(true)
      const listed = await t.runtime.listSignals(run.id)
      expect(listed.map((signal) => [signal.id, signal.takenBy])).toEqual([
        ['first', `${run.id}:approval:signal`],
        ['second', `${run.id}:again:signal`],
      ])
    })

    it('keeps signals sent before the run waits, and ctx.signals reads them in order, each once', async () => {
      await start()
      const run = await t.trigger('chat.session', {})
      await t.runUntilIdle()
      for (const text of ['hi', 'how are you', 'bye', 'after']) await t.sendSignal(run.id, 'message', text)
      await t.advance('1m')
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: ['hi', 'how are you', 'bye'] })
      const listed = await t.runtime.listSignals(run.id)
      expect(listed.map((signal) => [signal.data, signal.takenBy !== undefined])).toEqual([
        ['hi', true],
        ['how are you', true],
        ['bye', true],
        ['after', false],
      ])
    })

    it('meets two waits at once, each with its own name, sent before and after the run waits', async () => {
      await start()
      const run = await t.trigger('trip.both', {})
      await t.sendSignal(run.id, 'hotel', 'H1')
      await t.runUntilIdle()
      await t.sendSignal(run.id, 'flight', 'F1')
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: ['F1', 'H1'] })
    })

    it('times a wait out, and a signal sent after it stays for the next wait', async () => {
      await start()
      const run = await t.trigger('orders.approve', {})
      await t.advance('1h')
      await t.runUntilIdle()
      expect((await t.getRun(run.id))?.steps.approval).toMatchObject({ status: 'timed_out', kind: 'waitForSignal' })
      await t.sendSignal(run.id, 'approval', { ok: true })
      await t.advance('1m')
      await t.advanceUntilIdle()
      expect(await t.getRun(run.id)).toMatchObject({
        status: 'completed',
        result: { decision: { timedOut: true }, second: { data: { ok: true } } },
      })
    })

    it('keeps an id sent again once, and refuses finished and unknown runs, bad names and a full run, keeping nothing', async () => {
      await start()
      const run = await t.trigger('chat.session', {})
      await t.runUntilIdle()
      expect(await t.sendSignal(run.id, 'other', 1, { id: 'x' })).toMatchObject({ duplicate: false })
      expect(await t.sendSignal(run.id, 'other', 2, { id: 'x' })).toMatchObject({ id: 'x', duplicate: true })
      expect((await t.runtime.listSignals(run.id)).map((signal) => signal.data)).toEqual([1])
      await expect(t.sendSignal(run.id, 'no spaces', 1)).rejects.toThrow(/a signal name is 1 to 128 letters/)
      await expect(t.sendSignal(run.id, 'other', 1, { id: '' })).rejects.toThrow(/a signal id is 1 to 200 characters/)
      await expect(t.sendSignal('no-such-run', 'message', 1)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND', status: 404 })
      // The bound counts the signals no wait took: the one above is one of them.
      for (let i = 1; i < MAX_WAITING_SIGNALS; i++) await t.runtime.sendSignal(run.id, 'other', i)
      await expect(t.sendSignal(run.id, 'other', 'past the bound')).rejects.toMatchObject({ code: 'TOO_MANY_SIGNALS', status: 429 })
      await t.cancel(run.id)
      await expect(t.sendSignal(run.id, 'message', 'late')).rejects.toMatchObject({ code: 'RUN_FINISHED', status: 409 })
      expect(await t.runtime.listSignals(run.id)).toHaveLength(MAX_WAITING_SIGNALS)
    })
  })
}
