/**
 * "Wake now" and "fire now" (`TaskRuntime.wake`, `TaskRuntime.fireSchedule`):
 * a run sleeping a day, or delayed an hour, goes on at once through its own
 * timer, on the memory store and on SQLite files, one process's and a
 * shared one's; a run that waits on anything else is refused, saying what
 * resumes it. A scheduled task fires now as a tick of its schedule does.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { MemoryRunStore, type RunStore, tokenIdFor } from '../../src/runtime/tasks/index.ts'
import type { SvcError } from '../../src/runtime/errors.ts'
import type { RunRecord, TaskContext } from '../../src/types.ts'
import { finished, runtime, task, until } from './_helpers.ts'

const DAY = 86_400

const dir = mkdtempSync(join(tmpdir(), 'svc-wake-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const opened: SqliteRunStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close()
})
let files = 0
function sqlite(shared: boolean): SqliteRunStore {
  const store = new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), shared })
  opened.push(store)
  return store
}

async function reached(rt: { getRun(id: string): Promise<RunRecord | undefined> }, id: string, status: RunRecord['status']) {
  return until(async () => {
    const run = await rt.getRun(id)
    return run?.status === status ? run : undefined
  })
}

/** The error `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<SvcError> {
  return promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: SvcError) => error,
  )
}

const STORES: [string, () => RunStore][] = [
  ['the memory store', () => new MemoryRunStore()],
  ['a SQLite file', () => sqlite(false)],
  ['a SQLite file several processes share', () => sqlite(true)],
]

describe.each(STORES)('wake, on %s', (_name, makeStore) => {
  it('a run sleeping a day goes on now: its sleep is recorded met once, and the steps before it do not run again', async () => {
    let handlerCalls = 0
    let stepCalls = 0
    const rt = runtime(
      [
        task('napper', async (ctx: TaskContext) => {
          handlerCalls++
          const before = await ctx.step.run('before', () => ++stepCalls)
          await ctx.step.sleep('nap', DAY)
          return { before }
        }),
      ],
      { store: makeStore() },
    )
    const { id } = await rt.trigger('napper')
    const asleep = await reached(rt, id, 'suspended')
    expect(asleep.suspended?.waitpoint.type).toBe('sleep')

    const woken = await rt.wake(id)
    expect(woken.id).toBe(id)
    const run = await finished(rt.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', result: { before: 1 } })
    expect(run.steps.nap).toMatchObject({ status: 'completed', kind: 'sleep' })
    expect(Object.keys(run.steps)).toEqual(['before', 'nap'])
    expect(stepCalls).toBe(1)
    expect(handlerCalls).toBe(2)
    // The timer is the one the sleep set: none is left to fire a day later.
    expect(await rt.store.listTimers()).toEqual([])
  })

  it('a delayed run starts now', async () => {
    const rt = runtime([task('later', async () => 'done')], { store: makeStore() })
    const { id, status, runAt } = await rt.trigger('later', undefined, { delaySeconds: 3600 })
    expect(status).toBe('scheduled')
    const woken = await rt.wake(id)
    expect(Date.parse(woken.runAt!)).toBeLessThan(Date.parse(runAt!))
    expect(await finished(rt.waitForRun(id))).toMatchObject({ status: 'completed', result: 'done' })
  })

  it('refuses a run that waits on a token with RUN_NOT_SLEEPING, naming the token and how to complete it', async () => {
    const rt = runtime([task('approval', (ctx: TaskContext) => ctx.step.waitForToken('ok'))], { store: makeStore() })
    const { id } = await rt.trigger('approval')
    await reached(rt, id, 'suspended')
    const error = await refusal(rt.wake(id))
    expect(error).toMatchObject({ name: 'RunNotSleepingError', code: 'RUN_NOT_SLEEPING', status: 409 })
    expect(error.message).toContain(`token "${tokenIdFor(id, 'ok')}"`)
    expect(error.message).toContain('complete the token')
    // Still waiting, and the token still completes it.
    expect(await rt.completeToken(tokenIdFor(id, 'ok'), 'yes')).toBe('completed')
    expect(await finished(rt.waitForRun(id))).toMatchObject({ status: 'completed', result: { payload: 'yes' } })
  })

  it('refuses a finished run with RUN_FINISHED and an unknown one with RUN_NOT_FOUND', async () => {
    const rt = runtime([task('quick', async () => 1)], { store: makeStore() })
    const { id } = await rt.trigger('quick')
    await finished(rt.waitForRun(id))
    expect(await refusal(rt.wake(id))).toMatchObject({ code: 'RUN_FINISHED', status: 409 })
    expect((await refusal(rt.wake(id))).message).toContain('only a sleeping or delayed run can be woken')
    expect(await refusal(rt.wake('no-such-run'))).toMatchObject({ code: 'RUN_NOT_FOUND', status: 404 })
  })
})

describe('wake refuses', () => {
  it('a run waiting for an event, naming the event, and a run waiting for a child, naming the child', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([
      task('listener', (ctx: TaskContext) => ctx.step.waitForEvent('paid', 'order.paid')),
      task('parent', (ctx: TaskContext) => ctx.step.waitForTask('child', 'child')),
      task('child', () => gate),
    ])
    const listener = (await rt.trigger('listener')).id
    const parent = (await rt.trigger('parent')).id
    await reached(rt, listener, 'suspended')
    const waiting = await reached(rt, parent, 'suspended')
    const child = waiting.suspended?.waitpoint.type === 'task' ? waiting.suspended.waitpoint.runId : ''

    expect((await refusal(rt.wake(listener))).message).toContain('for event "order.paid"; send the event')
    expect((await refusal(rt.wake(parent))).message).toContain(`for child run ${child} of task "child"`)
    // The child is running: nothing to wake.
    expect(await refusal(rt.wake(child))).toMatchObject({ code: 'RUN_NOT_SLEEPING' })
    expect((await refusal(rt.wake(child))).message).toContain('it is running')
    release()
    await finished(rt.waitForRun(parent))
  })
})

describe('fireSchedule', () => {
  it('starts one run of a scheduled task now, as a tick of its schedule does', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([task('report', () => gate, { schedule: '0 3 * * *' })])
    const run = await rt.fireSchedule('report')
    expect(run).toMatchObject({ taskName: 'report', trigger: 'cron', input: { _cron: true } })
    // A second tick while the first run is live starts nothing, as the schedule's would not.
    const skipped = await refusal(rt.fireSchedule('report'))
    expect(skipped).toMatchObject({ name: 'TickSkippedError', code: 'TICK_SKIPPED', status: 409 })
    expect(skipped.message).toContain(`the previous scheduled run ${run.id} is still running`)
    release()
    expect(await finished(rt.waitForRun(run.id))).toMatchObject({ status: 'completed' })
    expect(await rt.fireSchedule('report')).toMatchObject({ trigger: 'cron' })
  })

  it('refuses a task without a schedule, naming how to start it, and an unknown task', async () => {
    const rt = runtime([task('plain', async () => 1)])
    const error = await refusal(rt.fireSchedule('plain'))
    expect(error).toMatchObject({ name: 'TaskNotScheduledError', code: 'NOT_SCHEDULED', status: 400 })
    expect(error.message).toContain('POST /__tasks/plain')
    expect(await refusal(rt.fireSchedule('nope'))).toMatchObject({ code: 'TASK_NOT_FOUND', status: 404 })
  })

  it('fires on a shard that does not own the schedule: the caller chose the shard', async () => {
    const rt = runtime([task('report', async () => 'ok', { schedule: '0 3 * * *' })], {
      shard: { index: 1, ownsEventRun: () => true, firesSchedule: () => false },
    })
    const run = await rt.fireSchedule('report')
    expect(await finished(rt.waitForRun(run.id))).toMatchObject({ status: 'completed', trigger: 'cron' })
  })
})
