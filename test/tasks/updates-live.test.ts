// Updates to runs as they go, on a runtime with the real clock: a run busy
// in a step here answers at once, while the step runs; a run not started
// yet keeps the update, its caller times out, and a request again with the
// update's id gets the answer once the run has started and answered; a run
// that ends without answering refuses the update it held.
import { afterEach, describe, expect, it } from 'vitest'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { UpdateTimeoutError } from '../../src/runtime/update-errors.ts'
import { RunFinishedError } from '../../src/runtime/errors.ts'
import { until } from './_helpers.ts'

const quiet = { info() {}, warn() {}, error() {} }
let runtime: TaskRuntime | undefined
afterEach(async () => {
  await runtime?.close()
  runtime = undefined
})

function start(POST: (ctx: TaskContext<any>) => unknown): TaskRuntime {
  const routes: RuntimeApiRoute[] = [{ path: '/api/job', module: { route: { kind: 'task' }, POST } } as RuntimeApiRoute]
  runtime = createTaskRuntime({ routes, logger: quiet })
  return runtime
}

describe('updates to runs as they go', () => {
  it('a run busy in a step here answers at once', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let progress = 'starting'
    const rt = start(async (ctx) => {
      ctx.onUpdate('progress', { handler: () => progress })
      progress = 'copying'
      await ctx.step.run('copy', () => gate)
      progress = 'done'
      return 'ok'
    })
    const run = await rt.trigger('job', {})
    await until(async () => (await rt.getRun(run.id))?.status === 'running' && progress === 'copying')
    expect(await rt.updateRun(run.id, 'progress', undefined, { timeoutSeconds: 5 })).toBe('copying')
    expect((await rt.getRun(run.id))?.steps.copy).toBeUndefined()
    release()
    expect((await rt.waitForRun(run.id)).result).toBe('ok')
  })

  it('a run not started yet keeps the update; asked again by id once it has answered, the caller gets the answer', async () => {
    const rt = start(async (ctx) => {
      ctx.onUpdate('hello', { handler: (name: string) => `hello, ${name}` })
      await ctx.step.waitForSignal('end', 'end')
      return 'ended'
    })
    const run = await rt.trigger('job', {}, { delaySeconds: 1 })
    const early = await rt.updateRun(run.id, 'hello', 'ada', { id: 'h-1', timeoutSeconds: 0.2 }).catch((error: unknown) => error)
    expect(early).toBeInstanceOf(UpdateTimeoutError)
    expect((early as UpdateTimeoutError).updateId).toBe('h-1')
    await until(async () => (await rt.getRun(run.id))?.status === 'suspended', 5000)
    expect(await rt.updateRun(run.id, 'hello', 'ada', { id: 'h-1' })).toBe('hello, ada')
    expect((await rt.listUpdates(run.id)).map((u) => u.status)).toEqual(['completed'])
    await rt.sendSignal(run.id, 'end')
    expect((await rt.waitForRun(run.id)).result).toBe('ended')
  })

  it('a run that finishes with an update pending refuses it as finished', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = start(async (ctx) => {
      await ctx.step.run('work', () => gate)
      // Declared after the update came, and the run ends without waiting: the update is answered before the end.
      ctx.onUpdate('late', { handler: () => 'answered on the way out' })
      return 'done'
    })
    const run = await rt.trigger('job', {})
    await until(async () => (await rt.getRun(run.id))?.status === 'running')
    const late = rt.updateRun(run.id, 'late', undefined, { timeoutSeconds: 5 })
    const never = rt.updateRun(run.id, 'never', undefined, { timeoutSeconds: 5 }).catch((error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 50))
    release()
    expect(await late).toBe('answered on the way out')
    const refused = await never
    expect((refused as { code?: string }).code).toBe('UPDATE_NOT_HANDLED')
    expect((await rt.waitForRun(run.id)).status).toBe('completed')
    await expect(rt.updateRun(run.id, 'late')).rejects.toBeInstanceOf(RunFinishedError)
  })
})
