/**
 * `svcjs/testing`: tasks run by the production engine on a memory store and
 * a virtual clock, so a month of a task's time takes milliseconds of the
 * test's, and every wait comes due at its own instant. The cases every store
 * runs are in kit-contract.ts; these are the memory store's own and the
 * kit's errors.
 */
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestRuntime, type TestRuntime } from '../../src/testing.ts'
import { START, task } from './_kit.ts'
import { kitContract } from './kit-contract.ts'

const realNow = Date.now

kitContract('the memory store')

let t: TestRuntime | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

describe('time', () => {
  it('advance moves to each wait at its instant, and not before', async () => {
    t = await createTestRuntime({ routes: [task('nap', (ctx) => ctx.step.sleep('nap', 3600))] })
    const run = await t.trigger('nap')
    expect(await t.waitingOn(run.id)).toEqual({ kind: 'sleep', step: 'nap', until: new Date(START + 3_600_000) })
    await t.advance('59m')
    expect((await t.getRun(run.id))!.status).toBe('suspended')
    await t.advance(60_000)
    expect((await t.getRun(run.id))!.status).toBe('completed')
    expect(await t.waitingOn(run.id)).toBeUndefined()
  })

  it('runs a debounced task once, after the window of the last trigger', async () => {
    t = await createTestRuntime({ routes: [task('sync', (ctx) => ctx.input, { debounce: { seconds: 60 } })] })
    await t.trigger('sync', { n: 1 })
    await t.advance('30s')
    await t.trigger('sync', { n: 2 })
    await t.advance('59s')
    expect(await t.runs({ status: 'completed' })).toHaveLength(0)
    await t.advance('1s')
    const done = await t.runs({ status: 'completed' })
    expect(done).toHaveLength(1)
    expect(done[0].result).toEqual({ n: 2 })
  })

  it('starts rate-limited runs as each window opens', async () => {
    t = await createTestRuntime({
      routes: [task('send', (ctx) => ({ at: ctx.now().getTime() - START }), { rateLimit: { limit: 2, periodSeconds: 60 } })],
    })
    for (let n = 0; n < 5; n++) await t.trigger('send', { n })
    expect(await t.runs({ status: 'completed' })).toHaveLength(2)
    await t.advanceUntilIdle()
    const at = (await t.runs({ status: 'completed' })).map((run) => (run.result as { at: number }).at).sort((a, b) => a - b)
    expect(at).toEqual([0, 0, 60_000, 60_000, 120_000])
  })
})

describe('the outside world', () => {
  it('says what a run that cannot finish waits on, and finishes it once given that', async () => {
    t = await createTestRuntime({ routes: [task('approve', async (ctx) => ({ approved: await ctx.step.waitForToken('ok') }))] })
    const error = await t.run('approve').catch((caught: Error) => caught)
    expect(error).toBeInstanceOf(Error)
    const [run] = await t.runs({ task: 'approve' })
    const waiting = await t.waitingOn(run.id)
    expect(waiting).toMatchObject({ kind: 'token', step: 'ok' })
    const tokenId = (waiting as { tokenId: string }).tokenId
    expect((error as Error).message).toContain(
      `step "ok" waits on token ${tokenId}; complete it with t.completeToken("${tokenId}", payload)`,
    )
    expect(await t.advanceUntilIdle()).toEqual([
      {
        runId: run.id,
        task: 'approve',
        waiting,
        message: `step "ok" waits on token ${tokenId}; complete it with t.completeToken("${tokenId}", payload)`,
      },
    ])
    await t.completeToken(tokenId, { by: 'ada' })
    expect(await t.getRun(run.id)).toMatchObject({ status: 'completed', result: { approved: { payload: { by: 'ada' } } } })
    expect(await t.advanceUntilIdle()).toEqual([])
  })

  it('runs a child run to its end for a parent that waits on it', async () => {
    t = await createTestRuntime({
      routes: [
        task('child', async (ctx) => {
          await ctx.step.sleep('later', 600)
          return { doubled: ctx.input.n * 2 }
        }),
        task('parent', (ctx) => ctx.step.waitForTask('child', 'child', { n: 21 })),
      ],
    })
    const run = await t.run('parent')
    expect(run).toMatchObject({
      status: 'completed',
      result: { ok: true, result: { doubled: 42 } },
      finishedAt: '2030-01-01T00:10:00.000Z',
    })
  })
})

describe('mocks and counts', () => {
  it('gives the same record, ids included, on every run of the same test', async () => {
    const runOnce = async () => {
      const kit = await createTestRuntime({
        routes: [
          task('steps', async (ctx) => {
            const a = await ctx.step.run('a', () => 1)
            await ctx.step.sleep('wait', 5)
            const b = await ctx.step.run('b', () => a + 1)
            return { a, b, at: ctx.now().toISOString() }
          }),
        ],
      })
      const run = await kit.run('steps')
      const sent = await kit.sendEvent('noted', { id: run.id })
      await kit.close()
      return { run, eventId: sent.id }
    }
    const first = await runOnce()
    expect(first.run.id).toBe('01b8dac5-b400-7000-8000-000000000001')
    expect(first.eventId).toBe('00000000-0000-4000-8000-000000000001')
    expect(await runOnce()).toEqual(first)
  })
})

describe('errors that help', () => {
  it('refuses options it cannot use, naming the fix', async () => {
    await expect(createTestRuntime({} as never)).rejects.toThrow(
      "give root (the app's directory, whose src/api is loaded) or routes (each { path, module }), not neither",
    )
    await expect(createTestRuntime({ routes: [], start: 'soon' })).rejects.toThrow(
      'start must be a Date, an ISO 8601 text or epoch milliseconds (got "soon")',
    )
    t = await createTestRuntime({ routes: [] })
    await expect(t.advance('1 day' as never)).rejects.toThrow(
      "a number and a unit, one of ms, s, m, h, d, w, as in '90s' or '1d' (got \"1 day\")",
    )
  })

  it('times out an attempt whose step never ends, on virtual time', async () => {
    t = await createTestRuntime({
      routes: [task('hang', (ctx) => ctx.step.run('forever', () => new Promise(() => {})), { timeout: 10_000 })],
    })
    const began = realNow()
    const run = await t.run('hang')
    expect(run.status).toBe('failed')
    expect(run.attempts.map((attempt) => attempt.error)).toEqual([expect.stringMatching(/timed out after 10000 ms/)])
    expect(t.now().getTime()).toBe(START + 10_000)
    expect(realNow() - began).toBeLessThan(1000)
  })
})

describe('an app directory', () => {
  it('loads the tasks of src/api as svc dev does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-testing-'))
    try {
      await cp(join(import.meta.dirname, '../../bench/_apps/tasks'), dir, { recursive: true })
      // The app's own dependencies (valibot), as an app's node_modules would hold them.
      await symlink(join(import.meta.dirname, '../../node_modules'), join(dir, 'node_modules'))
      t = await createTestRuntime({ root: dir })
      const run = await t.run('jobs.welcome', { email: 'ada@example.com' })
      expect(run).toMatchObject({ status: 'completed', finishedAt: '2030-01-01T00:01:00.000Z' })
      expect(Object.keys(run.steps)).toEqual(['create-account', 'settle', 'send-email', 'log'])
      await expect(t.trigger('jobs.welcome', { email: 'not an email' })).rejects.toThrow(/email/i)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
