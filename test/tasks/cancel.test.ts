/**
 * Cancelling and replaying runs in the engine, on the memory store and, across
 * a restart, on SQLite: what a cancel stops, what it leaves, and who hears of it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as v from 'valibot'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { RunCancelledError, RunFinishedError, RunNotFoundError, TaskNotFoundError, ValidationError } from '../../src/runtime/errors.ts'
import { MemoryRunStore, tokenIdFor } from '../../src/runtime/tasks/index.ts'
import type { SharedWork } from '../../src/runtime/tasks/store/store.ts'
import type { RunChange, RunRecord, TaskContext } from '../../src/types.ts'
import { deferred, finished, runtime, sleep, task, until } from './_helpers.ts'

async function status(rt: { getRun(id: string): Promise<RunRecord | undefined> }, id: string, wanted: RunRecord['status']) {
  return until(async () => {
    const run = await rt.getRun(id)
    return run?.status === wanted ? run : undefined
  })
}

describe('cancel', () => {
  it('aborts the signal of the running attempt with a RunCancelledError, and a handler that ignores it cannot change the run', async () => {
    const started = deferred()
    const release = deferred()
    let reason: unknown
    let lateStep: unknown
    const rt = runtime([
      task('stubborn', async (ctx: TaskContext) => {
        ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason))
        await ctx.step.run('first', () => 1)
        started.resolve()
        // Ignores its signal: carries on once released, and tries to record and return.
        await release.promise
        try {
          await ctx.step.run('second', () => 2)
        } catch (error) {
          lateStep = error
        }
        return 'done anyway'
      }),
    ])
    const { id } = await rt.trigger('stubborn')
    await started.promise
    const cancelled = await rt.cancel(id)
    expect(cancelled).toMatchObject({ id, status: 'cancelled', ok: false })
    expect(cancelled.finishedAt).toBeTypeOf('string')
    expect(reason).toBeInstanceOf(RunCancelledError)
    expect(reason).toMatchObject({ code: 'RUN_CANCELLED', message: `Run "${id}" of task "stubborn" was cancelled` })
    release.resolve()
    await until(() => lateStep !== undefined)
    expect((lateStep as Error).message).toMatch(/was called after attempt 1 of task "stubborn" was cancelled; the step did not run/)
    const run = (await rt.getRun(id))!
    expect(run.status).toBe('cancelled')
    expect(run.result).toBeUndefined()
    expect(run.steps).toEqual({ first: expect.objectContaining({ status: 'completed', output: 1 }) })
    expect(run.attempts).toEqual([])
  })

  it('cancels a sleeping run: its timer is gone and waitForRun resolves with the cancelled run', async () => {
    let calls = 0
    const rt = runtime([
      task('napper', async (ctx: TaskContext) => {
        calls++
        await ctx.step.sleep('nap', 0.2)
        return 'woke'
      }),
    ])
    const { id } = await rt.trigger('napper')
    const waiting = rt.waitForRun(id)
    await status(rt, id, 'suspended')
    expect((await rt.store.listTimers()).map((t) => t.runId)).toEqual([id])
    await rt.cancel(id)
    expect(await finished(waiting)).toMatchObject({ id, status: 'cancelled' })
    expect(await rt.store.listTimers()).toEqual([])
    // Past the sleep's due time, nothing resumed it.
    await sleep(300)
    expect(calls).toBe(1)
    expect((await rt.getRun(id))?.status).toBe('cancelled')
  })

  it('cancels a delayed run before it starts, removing its delay timer', async () => {
    let calls = 0
    const rt = runtime([task('later', () => void calls++)])
    const run = await rt.trigger('later', undefined, { delaySeconds: 60 })
    expect(run.status).toBe('scheduled')
    expect((await rt.cancel(run.id)).status).toBe('cancelled')
    expect(await rt.store.listTimers()).toEqual([])
    expect(calls).toBe(0)
  })

  it('a token of a cancelled run answers run_cancelled and resumes nothing', async () => {
    let calls = 0
    const rt = runtime([
      task('approval', async (ctx: TaskContext) => {
        calls++
        return ctx.step.waitForToken('ok', { timeoutSeconds: 60 })
      }),
    ])
    const { id } = await rt.trigger('approval')
    await status(rt, id, 'suspended')
    await rt.cancel(id)
    expect(await rt.store.listTimers()).toEqual([])
    expect(await rt.completeToken(tokenIdFor(id, 'ok'), { yes: true })).toBe('run_cancelled')
    expect(await rt.store.getToken(tokenIdFor(id, 'ok'))).toMatchObject({ status: 'waiting' })
    expect(calls).toBe(1)
    expect((await rt.getRun(id))?.status).toBe('cancelled')
  })

  it('a parent waiting on a cancelled child resumes with { ok: false, cancelled: true, error }', async () => {
    const rt = runtime([
      task('parent', async (ctx: TaskContext) => ctx.step.waitForTask('child', 'child')),
      task('child', async (ctx: TaskContext) => ctx.step.sleep('forever', 3600)),
    ])
    const parent = await rt.trigger('parent')
    const suspended = await status(rt, parent.id, 'suspended')
    const childId = (suspended.suspended!.waitpoint as { runId: string }).runId
    await status(rt, childId, 'suspended')
    await rt.cancel(childId)
    const done = await finished(rt.waitForRun(parent.id))
    expect(done.status).toBe('completed')
    expect(done.result).toEqual({ ok: false, cancelled: true, error: `Run ${childId} of task "child" was cancelled` })
  })

  it("a parent cancelled with children: 'none' leaves the child it waits on alone", async () => {
    const rt = runtime([
      task('parent', async (ctx: TaskContext) => ctx.step.waitForTask('child', 'child')),
      task('child', async (ctx: TaskContext) => ctx.step.waitForToken('go')),
    ])
    const parent = await rt.trigger('parent')
    const suspended = await status(rt, parent.id, 'suspended')
    const childId = (suspended.suspended!.waitpoint as { runId: string }).runId
    await status(rt, childId, 'suspended')
    expect(await rt.cancel(parent.id, { children: 'none' })).toMatchObject({ status: 'cancelled', cancelledWith: [] })
    expect(await rt.completeToken(tokenIdFor(childId, 'go'), 1)).toBe('completed')
    expect(await finished(rt.waitForRun(childId))).toMatchObject({ status: 'completed', result: { payload: 1 } })
    expect((await rt.getRun(parent.id))?.status).toBe('cancelled')
  })

  it('rejects with RunFinishedError for a finished run and RunNotFoundError for an unknown one', async () => {
    const rt = runtime([task('quick', () => 'ok')])
    const { id } = await rt.trigger('quick')
    await finished(rt.waitForRun(id))
    const error = await rt.cancel(id).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunFinishedError)
    expect(error).toMatchObject({ code: 'RUN_FINISHED', status: 409 })
    expect((error as Error).message).toMatch(/already finished \(completed\)/)
    await expect(rt.cancel('nope')).rejects.toBeInstanceOf(RunNotFoundError)
    expect((await rt.getRun(id))?.status).toBe('completed')
  })

  it('a cancel racing the attempt that completes the run: exactly one of them wins, and the run stays as the winner left it', async () => {
    for (let round = 0; round < 20; round++) {
      const gate = deferred()
      const rt = runtime([
        task('racer', async () => {
          await gate.promise
          return 'finished'
        }),
      ])
      const { id } = await rt.trigger('racer')
      const cancelling = rt.cancel(id).then(
        (run) => run.status,
        (error: unknown) => error,
      )
      gate.resolve()
      const outcome = await cancelling
      const final = await finished(rt.waitForRun(id))
      if (outcome === 'cancelled') {
        expect(final.status).toBe('cancelled')
        expect(final.result).toBeUndefined()
      } else {
        expect(outcome).toBeInstanceOf(RunFinishedError)
        expect(final).toMatchObject({ status: 'completed', result: 'finished' })
      }
      // Whatever was still in flight settles without moving the run again.
      await rt.drain(1000)
      expect((await rt.getRun(id))?.status).toBe(final.status)
      await rt.close()
    }
  })

  it('tells run change listeners of each change, then that it ended when the runtime drains', async () => {
    const rt = runtime([task('napper', async (ctx: TaskContext) => ctx.step.sleep('nap', 3600))])
    const changes: RunChange[] = []
    let ended = false
    const stop = rt.onRunChange!(
      (change) => changes.push(change),
      () => (ended = true),
    )
    const { id } = await rt.trigger('napper')
    await status(rt, id, 'suspended')
    await rt.cancel(id)
    expect(changes.map((c) => c.status)).toEqual(['running', 'suspended', 'cancelled'])
    expect(changes[0]).toEqual({ id, taskName: 'napper', status: 'running' })
    await rt.drain(100)
    expect(ended).toBe(true)
    stop()
  })
})

describe('cancel on SQLite, across a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cancel-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('a cancelled sleeping run stays cancelled after a restart and its sleep never resumes it', async () => {
    const path = join(dir, 'runs.db')
    let calls = 0
    const routes = [
      task('napper', async (ctx: TaskContext) => {
        calls++
        await ctx.step.run('before', () => 'kept')
        await ctx.step.sleep('nap', 0.3)
        return 'woke'
      }),
    ]
    const first = new SqliteRunStore({ path })
    const before = runtime(routes, { store: first })
    const { id } = await before.trigger('napper')
    await status(before, id, 'suspended')
    await before.cancel(id)
    await before.close()
    await first.close()

    const second = new SqliteRunStore({ path })
    const after = runtime(routes, { store: second })
    try {
      await after.recover()
      expect(await second.listTimers()).toEqual([])
      await sleep(400)
      const run = (await after.getRun(id))!
      expect(run).toMatchObject({ status: 'cancelled', ok: false })
      expect(run.steps.before).toMatchObject({ status: 'completed', output: 'kept' })
      expect(calls).toBe(1)
    } finally {
      await after.close()
      await second.close()
    }
  })
})

/**
 * The memory store, shared by one process: leases are always granted and
 * renewed, except on the runs in `lost`, as a shared store answers for a run
 * another process took over or cancelled.
 */
function sharedMemoryStore(lost: Set<string>): MemoryRunStore & { shared: SharedWork } {
  const store = new MemoryRunStore()
  const shared: SharedWork = {
    leaseMs: 60,
    pollMs: 60_000,
    claimDueTimers: async () => [],
    claimTimer: async (_owner, id) => store.takeTimer(id),
    finishTimer: async () => {},
    nextDueAt: async () => undefined,
    acquireLease: async () => true,
    renewLeases: async (_owner, ids) => ids.filter((id) => !lost.has(id)),
    releaseLeases: async () => {},
    claimOrphanedRuns: async () => [],
    claimTick: async () => true,
    wake: async () => {},
    subscribe: async () => async () => {},
  }
  return Object.assign(store, { shared })
}

describe('a lost lease on a shared store', () => {
  it('aborts the attempt, whose later steps and result then change nothing', async () => {
    const lost = new Set<string>()
    const store = sharedMemoryStore(lost)
    const started = deferred()
    const release = deferred()
    let reason: unknown
    const rt = runtime(
      [
        task('held', async (ctx: TaskContext) => {
          ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason))
          started.resolve()
          await release.promise
          await ctx.step.run('after', () => 'should not be kept').catch(() => undefined)
          return 'should not be kept either'
        }),
      ],
      { store },
    )
    await rt.recover()
    const { id } = await rt.trigger('held')
    await started.promise
    lost.add(id)
    await until(() => reason !== undefined)
    expect(reason).toMatchObject({ name: 'AbortError', message: expect.stringMatching(/lease on run .* was lost/) })
    expect(rt.logger.text('warn')).toMatch(new RegExp(`lost the lease on run ${id}`))
    release.resolve()
    await rt.drain(1000)
    expect(await rt.getRun(id)).toMatchObject({ status: 'running', attempts: [], steps: {} })
  })
})

describe('replay', () => {
  it('starts a new run of the task with the same input, trigger replay and replayOf', async () => {
    const rt = runtime([
      task(
        'double',
        (ctx: TaskContext<{ n: number }>) => {
          if (ctx.input.n < 0) throw new Error('negative')
          return ctx.input.n * 2
        },
        { input: v.object({ n: v.number() }) },
      ),
    ])
    const { id } = await rt.trigger('double', { n: -1 })
    expect((await finished(rt.waitForRun(id))).status).toBe('failed')
    const replay = await rt.replay(id)
    expect(replay).toMatchObject({ taskName: 'double', trigger: 'replay', replayOf: id, input: { n: -1 }, status: 'running' })
    expect(replay.id).not.toBe(id)
    expect(await finished(rt.waitForRun(replay.id))).toMatchObject({ status: 'failed', replayOf: id, trigger: 'replay' })
  })

  it('validates the input again against the schema of today, and keeps a scheduled run’s input as it was', async () => {
    let strict = false
    const rt = runtime([
      task('strict', (ctx: TaskContext) => ctx.input, {
        input: v.custom((value) => !strict || (typeof value === 'object' && value !== null && 'id' in value), 'needs an id'),
      }),
      task('nightly', (ctx: TaskContext) => ctx.input, { schedule: '0 3 * * *' }),
    ])
    const loose = await rt.trigger('strict', { name: 'x' })
    await finished(rt.waitForRun(loose.id))
    strict = true
    await expect(rt.replay(loose.id)).rejects.toBeInstanceOf(ValidationError)
    const cron = await rt.trigger('nightly', undefined, { trigger: 'cron' })
    await finished(rt.waitForRun(cron.id))
    const again = await rt.replay(cron.id)
    expect(await finished(rt.waitForRun(again.id))).toMatchObject({ input: { _cron: true }, result: { _cron: true }, trigger: 'replay' })
  })

  it('rejects with RunNotFoundError for an unknown run and TaskNotFoundError when its task is gone', async () => {
    const rt = runtime([task('here', () => 1)])
    await expect(rt.replay('nope')).rejects.toBeInstanceOf(RunNotFoundError)
    const orphan: RunRecord = {
      id: 'orphan',
      taskName: 'gone',
      status: 'failed',
      trigger: 'manual',
      input: null,
      ok: false,
      attempts: [],
      steps: {},
      createdAt: new Date().toISOString(),
    }
    await rt.store.createRun(orphan)
    await expect(rt.replay('orphan')).rejects.toBeInstanceOf(TaskNotFoundError)
  })
})
