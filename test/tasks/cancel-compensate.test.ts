// A cancel with `{ compensate: true }` of a run whose attempt runs here:
// the attempt is aborted (its ctx.signal says so) and records nothing,
// then the run undoes its completed steps and ends cancelled; over HTTP,
// `?compensate=true` does the same.
import { afterEach, describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { until } from './_helpers.ts'

const quiet = { info() {}, warn() {}, error() {} }
let runtime: TaskRuntime | undefined
afterEach(async () => {
  await runtime?.close()
  runtime = undefined
})

describe('a cancel that compensates a running run', () => {
  it('aborts the attempt here, undoes the completed steps, and ends the run cancelled', async () => {
    const calls: string[] = []
    let aborted: unknown
    const routes: RuntimeApiRoute[] = [
      {
        path: '/api/transfer',
        module: {
          route: { kind: 'task' },
          async POST(ctx: TaskContext) {
            await ctx.step.run('debit', () => (calls.push('debit'), 'D1'), { compensate: (id) => void calls.push(`refund ${id}`) })
            await ctx.step.run('credit', async () => {
              calls.push('credit started')
              await new Promise<void>((resolve) =>
                ctx.signal.addEventListener('abort', () => {
                  aborted = ctx.signal.reason
                  resolve()
                }),
              )
            })
            calls.push('after credit')
            return 'done'
          },
        },
      } as RuntimeApiRoute,
    ]
    const rt = (runtime = createTaskRuntime({ routes, logger: quiet }))
    const run = await rt.trigger('transfer', {})
    await until(() => calls.includes('credit started'))
    const cancelled = await rt.cancel(run.id, { compensate: true })
    expect(cancelled).toMatchObject({ status: 'running', compensation: { reason: 'cancelled', status: 'running' } })
    const done = await rt.waitForRun(run.id)
    expect(done).toMatchObject({ status: 'cancelled', compensation: { reason: 'cancelled', status: 'completed' } })
    expect(String(aborted)).toMatch(/was cancelled; its completed steps are being undone/)
    expect(done.steps.credit).toBeUndefined()
    expect(calls).toEqual(['debit', 'credit started', 'refund D1'])
  })
})
