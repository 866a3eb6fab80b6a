/**
 * One engine-level case that every store with fences must pass: a write that
 * finds the run taken over aborts the attempt at once, so a handler that
 * catches the error runs no further step. Each store's test says how another
 * process takes the run over (`takeOver`) and closes what it opened.
 */
import { expect } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import type { TaskContext, TaskRuntime } from '../../src/types.ts'
import { deferred, recordingLogger, until } from './_helpers.ts'

export async function lostAttemptStopsAtOnce(store: RunStore, takeOver: (runId: string) => Promise<unknown> | unknown): Promise<void> {
  const logger = recordingLogger()
  const ran: string[] = []
  const gate = deferred()
  let signal: AbortSignal | undefined
  const runtime: TaskRuntime = createTaskRuntime({
    store,
    logger,
    env: {},
    routes: [
      {
        path: '/api/caught',
        module: {
          kind: 'task',
          async POST(ctx: TaskContext) {
            signal = ctx.signal
            await ctx.step.run('one', () => ran.push('one'))
            try {
              await ctx.step.run('two', async () => {
                await gate.promise
                ran.push('two')
              })
            } catch {
              // Carries on regardless, as a careless handler would.
            }
            await ctx.step.run('three', () => ran.push('three'))
          },
        },
      },
    ],
  })
  await runtime.recover()
  const run = await runtime.trigger('caught')
  try {
    await until(async () => (await store.getRun(run.id))?.steps.one !== undefined)
    // Another process takes the run over while step "two" runs here.
    await takeOver(run.id)
    gate.resolve()
    await until(() => signal?.aborted)
    await runtime.drain(5000)
  } finally {
    await runtime.close()
  }
  expect(ran).toEqual(['one', 'two'])
  const after = (await store.getRun(run.id))!
  expect(after).toMatchObject({ status: 'running', attempts: [] })
  expect(Object.keys(after.steps)).toEqual(['one'])
  const lost = logger.lines.filter((line) => line.text.includes(`lost the lease on run ${run.id}`))
  expect(lost).toHaveLength(1)
  expect(lost[0].level).toBe('warn')
  expect(logger.text('error')).toBe('')
}
