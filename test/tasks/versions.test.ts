/**
 * Runs pinned to the version of their task's code (docs/deploying.md "Runs across deploys"): each
 * run records its version; a process of another version that finds it due
 * moves it to its own ('migrate', recorded) or fails it ('fail'), when no
 * live process serves its version. Here one process at a time on one SQLite
 * file, as a deploy restarts it; processes side by side on a shared store
 * are in processes-contract.ts.
 */
import { describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import type { TaskContext } from '../../src/types.ts'
import { sqliteFiles } from '../node/_sqlite-files.ts'
import { finished, runtime, task, until } from './_helpers.ts'

const { dbFile } = sqliteFiles('svc-versions-')

/** Records the version it runs on before and after a sleep. */
const report = task('jobs.report', async (ctx: TaskContext<{ sleep?: number }>) => {
  const before = await ctx.step.run('before', () => ctx.version)
  await ctx.step.sleep('pause', ctx.input.sleep ?? 0.2)
  const after = await ctx.step.run('after', () => ctx.version)
  return { before, after }
})

describe('the version a run records', () => {
  it("is the runtime's version, else SVC_VERSION, else the route's; ctx.version says it", async () => {
    const rt = runtime([report], { version: 'app-7' })
    const run = await finished(rt.waitForRun((await rt.trigger('jobs.report', { sleep: 0 })).id))
    expect(run).toMatchObject({ version: 'app-7', result: { before: 'app-7', after: 'app-7' } })

    const fromEnv = runtime([{ ...report, version: 'digest-1' }], { env: { SVC_VERSION: 'env-3' } })
    expect((await fromEnv.trigger('jobs.report', { sleep: 0 })).version).toBe('env-3')

    const fromRoute = runtime([{ ...report, version: 'digest-1' }])
    const routed = await finished(fromRoute.waitForRun((await fromRoute.trigger('jobs.report', { sleep: 0 })).id))
    expect(routed).toMatchObject({ version: 'digest-1', result: { before: 'digest-1', after: 'digest-1' } })

    const none = runtime([report])
    const plain = await finished(none.waitForRun((await none.trigger('jobs.report', { sleep: 0 })).id))
    expect(plain.version).toBeUndefined()
    expect(plain.result).toEqual({})
  })

  it('refuses a version that is not 1 to 128 printable characters, and a policy it does not know', () => {
    expect(() => runtime([report], { version: 'has space' })).toThrow(/version: a version holds only printable ASCII/)
    expect(() => runtime([report], { env: { SVC_VERSION: 'x'.repeat(129) } })).toThrow(
      /SVC_VERSION: a version must be a string of 1 to 128/,
    )
    expect(() => runtime([{ ...report, version: '' }])).toThrow(/Task "jobs.report".*a version must be a string/)
    expect(() => runtime([report], { versionPolicy: 'keep' as never })).toThrow(/versionPolicy must be 'migrate' or 'fail'/)
    expect(() => runtime([report], { env: { SVC_VERSION_POLICY: 'drop' } })).toThrow(/SVC_VERSION_POLICY must be 'migrate' or 'fail'/)
  })

  it('lists the runs of a version', async () => {
    const rt = runtime([report], { version: 'v1' })
    const { id } = await rt.trigger('jobs.report', { sleep: 0 })
    expect((await rt.listRuns({ version: 'v1' })).map((run) => run.id)).toEqual([id])
    expect(await rt.listRuns({ version: 'v2' })).toEqual([])
  })
})

/** A run of version v1 asleep on a SQLite file whose process has gone; the file. */
async function asleepOnV1(): Promise<{ path: string; id: string }> {
  const path = dbFile()
  const rt = runtime([report], { version: 'v1', store: new SqliteRunStore({ path }) })
  const { id } = await rt.trigger('jobs.report', { sleep: 0.3 })
  await until(async () => (await rt.getRun(id))?.status === 'suspended')
  await rt.close()
  return { path, id }
}

describe('a run whose version no live process serves', () => {
  it("moves to the version of the process that finds it due ('migrate', the default), which records the move", async () => {
    const { path, id } = await asleepOnV1()
    const rt = runtime([report], { version: 'v2', store: new SqliteRunStore({ path }) })
    await rt.recover()
    const run = await finished(rt.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', version: 'v2', result: { before: 'v1', after: 'v2' } })
    expect(run.migrations).toEqual([{ from: 'v1', to: 'v2', at: expect.any(String) }])
    expect(rt.logger.text('warn')).toMatch(`run ${id} started on version v1, which no live process serves any more; it moved to version v2`)
  })

  it("fails with RUN_VERSION_RETIRED under versionPolicy 'fail', running nothing more", async () => {
    const { path, id } = await asleepOnV1()
    const rt = runtime([report], { version: 'v2', versionPolicy: 'fail', store: new SqliteRunStore({ path }) })
    await rt.recover()
    const run = await finished(rt.waitForRun(id))
    expect(run).toMatchObject({ status: 'failed', version: 'v1' })
    expect(run.attempts.at(-1)?.error).toMatch(
      `Run ${id} of task "jobs.report" started on version v1, which no live process serves any more, and versionPolicy is 'fail'`,
    )
    expect(Object.keys(run.steps)).toEqual(['before', 'pause'])
  })

  it('runs as before on the version it started on', async () => {
    const { path, id } = await asleepOnV1()
    const rt = runtime([report], { version: 'v1', store: new SqliteRunStore({ path }) })
    await rt.recover()
    const run = await finished(rt.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', version: 'v1', result: { before: 'v1', after: 'v1' } })
    expect(run.migrations).toBeUndefined()
  })
})
