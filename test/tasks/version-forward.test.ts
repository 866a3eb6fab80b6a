/**
 * `versionPolicy: 'migrate'` moves runs forward only (docs/deploying.md
 * "Runs across deploys"): to the newest live version by release number,
 * else by when that version's processes first registered, never by when
 * the latest process started. Processes side by side on one shared SQLite
 * file, each a runtime of its own in this process.
 */
import { describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { compareReleases, forwardVersion, releaseParts } from '../../src/runtime/tasks/base/version-order.ts'
import type { TaskContext } from '../../src/types.ts'
import { sqliteFiles } from '../node/_sqlite-files.ts'
import { finished, runtime, task, until } from './_helpers.ts'

const { dbFile } = sqliteFiles('svc-version-forward-')

/** Records the version it runs on before and after a sleep. */
const report = task('jobs.report', async (ctx: TaskContext<{ sleep: number }>) => {
  const before = await ctx.step.run('before', () => ctx.version)
  await ctx.step.sleep('pause', ctx.input.sleep)
  const after = await ctx.step.run('after', () => ctx.version)
  return { before, after }
})

/** A process of `version` on the shared file `path`, registered and sweeping. */
async function processOf(path: string, version: string) {
  const rt = runtime([report], { version, store: new SqliteRunStore({ path, shared: true, leaseMs: 600, pollMs: 50 }) })
  await rt.recover()
  return rt
}

describe('a rolling deploy where an old process restarts mid-way', () => {
  it('moves a run orphaned afterwards to the new version, never back to the restarted old one', async () => {
    const path = dbFile()
    const retired = await processOf(path, 'v0')
    const { id } = await retired.trigger('jobs.report', { sleep: 1.5 })
    await until(async () => (await retired.getRun(id))?.status === 'suspended')
    await retired.close()

    const old = await processOf(path, 'v1')
    const current = await processOf(path, 'v2')
    // The old pod restarts: the process of v1 is now the one that started last.
    await old.close()
    const restarted = await processOf(path, 'v1')

    const run = await finished(current.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', version: 'v2', result: { before: 'v0', after: 'v2' } })
    expect(run.migrations).toEqual([{ from: 'v0', to: 'v2', at: expect.any(String) }])
    expect(restarted.logger.text('warn')).not.toMatch('moved to version v1')
  })
})

describe('a rolling deploy of versions that are no release numbers (digests, commits)', () => {
  it("moves a run to the new version though a process of the old one registered last, and after the old one's processes stopped", async () => {
    const path = dbFile()
    const retired = await processOf(path, 'aaaa0000')
    const { id } = await retired.trigger('jobs.report', { sleep: 1.5 })
    await until(async () => (await retired.getRun(id))?.status === 'suspended')
    await retired.close()

    const old = await processOf(path, 'bbbb1111')
    const current = await processOf(path, 'cccc2222')
    // The old pod restarts after the new one registered: its version is still the older.
    await old.close()
    const restarted = await processOf(path, 'bbbb1111')

    const run = await finished(current.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', version: 'cccc2222', result: { before: 'aaaa0000', after: 'cccc2222' } })
    expect(run.migrations).toEqual([{ from: 'aaaa0000', to: 'cccc2222', at: expect.any(String) }])
    expect(restarted.logger.text('warn')).not.toMatch('moved to version bbbb1111')
    await restarted.close()
    await current.close()
  })
})

describe('which way is forward', () => {
  it('orders release numbers as numbers, with or without a v, and takes no digest for one', () => {
    expect(compareReleases(releaseParts('v10')!, releaseParts('v9')!)).toBeGreaterThan(0)
    expect(compareReleases(releaseParts('1.10.0')!, releaseParts('1.9')!)).toBeGreaterThan(0)
    expect(compareReleases(releaseParts('2')!, releaseParts('v2.0')!)).toBe(0)
    expect(releaseParts('3f9a0c21be47')).toBeUndefined()
    expect(releaseParts('123456789012')).toBeUndefined()
  })

  it('moves a run to the highest live release, whatever order their processes registered in', () => {
    expect(forwardVersion('v1', [], ['v3', 'v2'])).toBe('v3')
    expect(forwardVersion('1.2', [], ['1.10', '1.9'])).toBe('1.10')
  })

  it('moves a run to no release before its own: it waits for one at or past it', () => {
    expect(forwardVersion('v3', [], ['v1', 'v2'])).toBeUndefined()
    expect(forwardVersion('v3', [], ['v2', 'v4'])).toBe('v4')
  })

  it('orders versions that are no release numbers by when they were first registered, never back to one the run left', () => {
    expect(forwardVersion('a1b2', [], ['c3d4', 'e5f6'])).toBe('e5f6')
    expect(forwardVersion('e5f6', ['c3d4'], ['c3d4'])).toBeUndefined()
    expect(forwardVersion('v2', [], ['v1', 'abc'])).toBe('abc')
  })
})
