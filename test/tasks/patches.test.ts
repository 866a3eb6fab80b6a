/**
 * `ctx.patched(id)` and `ctx.deprecatePatch(id)`: a task changed under a
 * run that sleeps. The new code asks whether the run takes the patch's new
 * branch: a run that passed that point on the old code takes the old one
 * and completes; a new run takes the new one; the answer is recorded. The
 * same change without a patch fails the sleeping run with
 * StepMismatchError, as before. A deprecated patch fails a run that went
 * the old way, and lets the others go on.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import type { RuntimeApiRoute, TaskContext } from '../../src/types.ts'
import { finished, runtime, task, until } from './_helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-patches-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const email = task('jobs.email', () => 'sent by task')

/** v1: notifies in a step, sleeps, finishes. */
const v1 = task('jobs.order', async (ctx) => {
  const notified = await ctx.step.run('notify', () => 'sent inline')
  await ctx.step.sleep('wait', 0.2)
  await ctx.step.sleep('cool', 0.3)
  return { notified, done: await ctx.step.run('finish', () => true) }
})

/** v2 without a patch: the notification moved to a child task under the same key. */
const v2Unpatched = task('jobs.order', async (ctx) => {
  const child = await ctx.step.waitForTask('notify', 'jobs.email')
  await ctx.step.sleep('wait', 0.2)
  await ctx.step.sleep('cool', 0.3)
  return { notified: child.result, done: await ctx.step.run('finish', () => true) }
})

/** v2 with a patch: runs that notified inline keep doing so. */
const v2Patched = task('jobs.order', async (ctx) => {
  let notified: unknown
  if (await ctx.patched('notify-by-task')) notified = (await ctx.step.waitForTask('notify', 'jobs.email')).result
  else notified = await ctx.step.run('notify', () => 'sent inline')
  // Asked twice in one invocation, the answer is the same, and no duplicate key.
  expect(await ctx.patched('notify-by-task')).toBe(notified === 'sent by task')
  await ctx.step.sleep('wait', 0.2)
  await ctx.step.sleep('cool', 0.3)
  return { notified, done: await ctx.step.run('finish', () => true) }
})

/** v3: the old branch is gone. */
const v3 = task('jobs.order', async (ctx: TaskContext) => {
  await ctx.deprecatePatch('notify-by-task')
  const child = await ctx.step.waitForTask('notify', 'jobs.email')
  await ctx.step.sleep('wait', 0.2)
  await ctx.step.sleep('cool', 0.3)
  return { notified: child.result, done: await ctx.step.run('finish', () => true) }
})

/**
 * A runtime of `routes` on the SQLite file at `path`, whose store closes with
 * it, as when its process exits: a run it left running is the next one's.
 */
function onFile(path: string, routes: RuntimeApiRoute[]) {
  const store = new SqliteRunStore({ path })
  const rt = runtime(routes, { store })
  const close = rt.close.bind(rt)
  rt.close = async () => {
    await close()
    await store.close()
  }
  return rt
}

/** A run of v1 suspended on its sleep, on a SQLite file; the file's path. */
async function sleepingRun(): Promise<{ path: string; id: string }> {
  const path = join(dir, `runs-${++files}.db`)
  const rt = onFile(path, [v1, email])
  const { id } = await rt.trigger('jobs.order')
  await until(async () => (await rt.getRun(id))?.status === 'suspended')
  await rt.close()
  return { path, id }
}

/** The runtime of `code` on the file at `path`, after a restart. */
async function deployed(path: string, code: RuntimeApiRoute) {
  const rt = onFile(path, [code, email])
  await rt.recover()
  return rt
}

describe('a task changed under a sleeping run', () => {
  it('without a patch, the sleeping run fails with StepMismatchError, as before', async () => {
    const { path, id } = await sleepingRun()
    const rt = await deployed(path, v2Unpatched)
    const done = await finished(rt.waitForRun(id))
    expect(done.status).toBe('failed')
    expect(done.attempts.at(-1)?.error).toMatch(
      /Step "notify" was recorded as ctx.step.run but is now reached through ctx.step.waitForTask/,
    )
  })

  it('with a patch, the sleeping run takes the old branch and completes, and a new run takes the new one', async () => {
    const { path, id } = await sleepingRun()
    const rt = await deployed(path, v2Patched)
    const old = await finished(rt.waitForRun(id))
    expect(old.status).toBe('completed')
    expect(old.result).toEqual({ notified: 'sent inline', done: true })
    expect(old.steps['patch:notify-by-task']).toMatchObject({ status: 'completed', output: false, kind: 'patch' })

    const fresh = await finished(rt.waitForRun((await rt.trigger('jobs.order')).id))
    expect(fresh.status).toBe('completed')
    expect(fresh.result).toEqual({ notified: 'sent by task', done: true })
    expect(fresh.steps['patch:notify-by-task']).toMatchObject({ output: true, kind: 'patch' })
    // The replays after its sleep asked again and got the recorded answer: the child ran once.
    expect((await rt.listRuns({ taskName: 'jobs.email' })).length).toBe(1)
  })

  it('a deprecated patch fails a run that went the old way, without a retry, and lets a run that went the new way go on', async () => {
    const { path, id } = await sleepingRun()
    // On the patched code, the sleeping run records the old way and sleeps again; a new run goes the new way and sleeps.
    const patchedRt = await deployed(path, v2Patched)
    const { id: newWay } = await patchedRt.trigger('jobs.order')
    const asleep = async (runId: string) => {
      const run = await patchedRt.getRun(runId)
      return run?.status === 'suspended' && run.steps['patch:notify-by-task'] !== undefined ? run : undefined
    }
    expect((await until(() => asleep(id), 15_000)).steps['patch:notify-by-task'].output).toBe(false)
    expect((await until(() => asleep(newWay), 15_000)).steps['patch:notify-by-task'].output).toBe(true)
    await patchedRt.close()

    const rt = await deployed(path, { ...v3, module: { ...v3.module, route: { kind: 'task', retries: 3 } } })
    const oldWay = await finished(rt.waitForRun(id))
    expect(oldWay.status).toBe('failed')
    expect(oldWay.attempts).toHaveLength(1)
    expect(oldWay.attempts[0].error).toMatch(/passed patch "notify-by-task" on its old branch/)
    const done = await finished(rt.waitForRun(newWay))
    expect(done.status).toBe('completed')
    expect(done.result).toEqual({ notified: 'sent by task', done: true })
  }, 40_000)

  it('a deprecated patch fails a run that passed its point before the patch existed', async () => {
    const { path, id } = await sleepingRun()
    const rt = await deployed(path, v3)
    const done = await finished(rt.waitForRun(id))
    expect(done.status).toBe('failed')
    expect(done.attempts.at(-1)?.error).toMatch(/passed patch "notify-by-task" on its old branch/)
  })
})
