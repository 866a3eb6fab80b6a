/**
 * Deadlines (`route.maxDuration`, a trigger's `deadline`): past it a run
 * fails with DEADLINE_EXCEEDED, for good, whatever it was doing: asleep,
 * waiting on a token or a child, queued, between retries, or running (its
 * attempt aborted through ctx.signal). A child it waits on takes its
 * deadline. Driven by svcjs/testing on the virtual clock; deadline.test.ts
 * runs these on memory and SQLite, test/postgres/deadline.test.ts on Postgres.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import type { RunStore, StoreLifecycle } from '../../src/runtime/types/run-store.ts'
import type { RunRecord } from '../../src/types.ts'
import { START, task } from '../testing/_kit.ts'

const DAY = 86_400
const effects: string[] = []

const ROUTES = [
  task(
    'sleeper',
    async (ctx) => {
      await ctx.step.sleep('a-day', DAY)
      await ctx.step.run('after', () => effects.push('sleeper-after'))
    },
    { maxDuration: 60, retries: 3 },
  ),
  task('approval', (ctx) => ctx.step.waitForToken('ok'), { maxDuration: 3600 }),
  // Runs until its signal aborts.
  task('busy', (ctx) =>
    ctx.step.run('work', () => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))),
  ),
  task(
    'flaky',
    () => {
      effects.push('flaky')
      throw new Error('down')
    },
    { retries: 5 },
  ),
  task('parent', (ctx) => ctx.step.waitForTask('child', 'child', {}), { maxDuration: 60 }),
  task('hasty-parent', (ctx) => ctx.step.waitForTask('child', 'child', {}, { deadline: new Date(ctx.now().getTime() + 10_000) }), {
    maxDuration: 60,
  }),
  task('child', (ctx) => ctx.step.sleep('a-day', DAY)),
  // Holds its slot until its signal aborts.
  task(
    'slot',
    (ctx) => ctx.step.run('work', () => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))),
    { concurrency: 1, maxDuration: 120, timeout: 600_000 },
  ),
]

/** The attempt that records a run's failure at its deadline. */
function failedAtDeadline(run: RunRecord | undefined, deadline: number): void {
  expect(run).toMatchObject({
    status: 'failed',
    ok: false,
    deadline: new Date(deadline).toISOString(),
    finishedAt: new Date(deadline).toISOString(),
  })
  expect(run!.attempts.at(-1)).toMatchObject({
    code: 'DEADLINE_EXCEEDED',
    error: `Run "${run!.id}" of task "${run!.taskName}" passed its deadline of ${new Date(deadline).toISOString()}`,
  })
}

/** The cases, each on a store `makeStore` makes for it (none: the kit's memory store), closed after it. */
export function deadlineCases(name: string, makeStore?: () => (RunStore & StoreLifecycle) | Promise<RunStore & StoreLifecycle>): void {
  describe(`deadlines, on ${name}`, () => {
    let t: TestRuntime
    let store: (RunStore & StoreLifecycle) | undefined
    afterEach(async () => {
      await t.close()
      await store?.close()
      effects.length = 0
    })
    const start = async () => {
      store = await makeStore?.()
      t = await createTestRuntime({ routes: ROUTES, ...(store ? { store } : {}) })
    }

    it('route.maxDuration fails a sleeping run at its deadline, for good: no retry, no later step', async () => {
      await start()
      const run = await t.trigger('sleeper')
      expect(run.deadline).toBe(new Date(START + 60_000).toISOString())
      await t.advance('59s')
      expect((await t.getRun(run.id))?.status).toBe('suspended')
      expect(await t.advanceUntilIdle()).toEqual([])
      failedAtDeadline(await t.getRun(run.id), START + 60_000)
      expect((await t.getRun(run.id))?.attempts).toHaveLength(1)
      expect(effects).toEqual([])
      expect(t.now().getTime()).toBe(START + 60_000)
    })

    it("a trigger's deadline applies when it is earlier than maxDuration's, and a later one does not", async () => {
      await start()
      const early = await t.trigger('approval', undefined, { deadline: new Date(START + 5_000) })
      const late = await t.trigger('approval', undefined, { deadline: new Date(START + 7_200_000).toISOString() })
      expect([early.deadline, late.deadline]).toEqual([new Date(START + 5_000).toISOString(), new Date(START + 3_600_000).toISOString()])
      await t.advance('5s')
      failedAtDeadline(await t.getRun(early.id), START + 5_000)
      expect((await t.getRun(late.id))?.status).toBe('suspended')
      await t.advance('1h')
      failedAtDeadline(await t.getRun(late.id), START + 3_600_000)
    })

    it('aborts a running attempt through ctx.signal with DeadlineExceededError, and fails the run at once', async () => {
      await start()
      const run = await t.trigger('busy', undefined, { deadline: START + 2_000 })
      expect((await t.getRun(run.id))?.status).toBe('running')
      await t.advance('2s')
      failedAtDeadline(await t.getRun(run.id), START + 2_000)
    })

    it('arms a retry no later than the deadline, where the run fails without another attempt', async () => {
      await start()
      const run = await t.trigger('flaky', undefined, { deadline: START + 50 })
      await t.advanceUntilIdle()
      const failed = await t.getRun(run.id)
      failedAtDeadline(failed, START + 50)
      // Attempt 1 failed, its retry was due at the deadline: attempt 2 never ran.
      expect(effects).toEqual(['flaky'])
      expect(failed!.attempts.map((a) => [a.index, a.code])).toEqual([
        [1, undefined],
        [2, 'DEADLINE_EXCEEDED'],
      ])
    })

    it('a child the run waits on takes its deadline, or keeps its own earlier one; each fails at its own', async () => {
      await start()
      const parent = await t.trigger('parent')
      const [child] = await t.runs({ task: 'child' })
      expect(child.deadline).toBe(parent.deadline)
      const hasty = await t.trigger('hasty-parent')
      // Newest first: the hasty parent's child, with its own earlier deadline.
      const [hastyChild] = await t.runs({ task: 'child' })
      expect(hastyChild.deadline).toBe(new Date(START + 10_000).toISOString())
      await t.advanceUntilIdle()
      failedAtDeadline(await t.getRun(parent.id), START + 60_000)
      failedAtDeadline(await t.getRun(child.id), START + 60_000)
      failedAtDeadline(await t.getRun(hastyChild.id), START + 10_000)
      // The hasty parent resumed with its child's failure at 10 s, and returned it: the child's failure is the parent's to handle.
      expect(await t.getRun(hasty.id)).toMatchObject({
        status: 'completed',
        finishedAt: new Date(START + 10_000).toISOString(),
        result: { ok: false, error: expect.stringContaining('passed its deadline') },
      })
    })

    it('fails a run that waits queued behind a concurrency limit at its deadline', async () => {
      await start()
      const first = await t.trigger('slot')
      const queued = await t.trigger('slot')
      expect((await t.getRun(queued.id))?.status).toBe('queued')
      await t.advance('2m')
      failedAtDeadline(await t.getRun(queued.id), START + 120_000)
      failedAtDeadline(await t.getRun(first.id), START + 120_000)
    })

    it('a run that finishes before its deadline leaves no timer behind: the clock does not move to it', async () => {
      await start()
      const run = await t.trigger('approval')
      await t.completeToken(`${run.id}:ok`, { by: 'ops' })
      expect((await t.getRun(run.id))?.status).toBe('completed')
      expect(await t.advanceUntilIdle()).toEqual([])
      expect(t.now().getTime()).toBe(START)
    })

    it('refuses a deadline that is not an instant, naming the fix', async () => {
      await start()
      await expect(t.trigger('approval', undefined, { deadline: 60 })).rejects.toThrow(
        'trigger("approval"): deadline must be an instant, not a duration (got 60, before 2000); for a time from now, pass new Date(Date.now() + ms), or set route.maxDuration',
      )
      await expect(t.trigger('approval', undefined, { deadline: 'tomorrow' })).rejects.toThrow(
        'trigger("approval"): deadline must be an instant: a Date, an ISO 8601 string or epoch milliseconds (got "tomorrow")',
      )
      expect(await t.runs({ task: 'approval' })).toEqual([])
    })
  })
}
