import { describe, expect, it } from 'vitest'
import { enqueue, setActiveTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { runtime, sleep, task, until } from './_helpers.ts'

/** The run once it finished, or a clear failure after a generous bound instead of the test timeout. */
async function finished(wait: Promise<RunRecord>): Promise<RunRecord> {
  const timeout = sleep(5000).then(() => {
    throw new Error('the run did not finish within 5 s')
  })
  return Promise.race([wait, timeout])
}

// step.waitForTask passes the caller's idempotencyKey to the child, so two
// runs (or a run and a plain enqueue) can end up waiting for the same child.
// That child was started for someone else: its parentRunId does not name
// every run that waits for it.
describe('waitForTask on a child shared through an idempotency key', () => {
  it('two parents that wait for one child both resume when it completes', async () => {
    let childRuns = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([
      task('setup', async () => {
        childRuns++
        await gate
        return 'ready'
      }),
      task('worker', async (ctx) => ctx.step.waitForTask('setup', 'setup', undefined, { idempotencyKey: 'setup-once' })),
    ])
    const first = await rt.trigger('worker')
    const second = await rt.trigger('worker')
    await until(async () => {
      const runs = await Promise.all([rt.getRun(first.id), rt.getRun(second.id)])
      return runs.every((run) => run?.status === 'suspended')
    })
    release()
    const done = await Promise.all([finished(rt.waitForRun(first.id)), finished(rt.waitForRun(second.id))])
    expect(done.map((run) => run.result)).toEqual([
      { ok: true, result: 'ready' },
      { ok: true, result: 'ready' },
    ])
    expect(childRuns).toBe(1)
  })

  it('a parent that waits for a run enqueued earlier with the same key resumes when it fails', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([
      task('import', async () => {
        await gate
        throw new Error('bad file')
      }),
      task('report', async (ctx) => ctx.step.waitForTask('import', 'import', undefined, { idempotencyKey: 'import-2024' })),
    ])
    setActiveTaskRuntime(rt)
    const imported = await enqueue('import', undefined, { idempotencyKey: 'import-2024' })
    const report = await rt.trigger('report')
    const suspended = await until(async () => {
      const run = await rt.getRun(report.id)
      return run?.status === 'suspended' ? run : undefined
    })
    expect(suspended.suspended?.waitpoint).toEqual({ type: 'task', task: 'import', runId: imported.runId })
    release()
    const done = await finished(rt.waitForRun(report.id))
    expect(done.result).toEqual({ ok: false, error: 'bad file' })
  })
})
