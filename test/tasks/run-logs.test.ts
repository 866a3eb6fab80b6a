/**
 * `ctx.log.info|warn|error`: entries kept in the run's record with their
 * attempt and step, bounded (the oldest dropped and counted), never
 * throwing; a replay logs nothing twice; `printRunLogs` prints them; and
 * `GET /__tasks/runs/<id>/logs` pages through them. Also the timings of
 * the steps a run records.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SqliteRunStore } from '../../src/node.ts'
import { runLogPage } from '../../src/runtime/admin/run-logs.ts'
import { MAX_LOG_ATTRIBUTES_BYTES, MAX_LOG_MESSAGE_LENGTH, MAX_RUN_LOGS } from '../../src/runtime/tasks/steps/run-logs.ts'
import type { RunRecord } from '../../src/types.ts'
import { finished, recordingLogger, runtime, task, until } from './_helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-run-logs-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const said = (run: RunRecord | undefined) =>
  (run?.logs?.kept ?? []).map((e) => `${e.seq} ${e.level} a${e.attempt}${e.step ? ` ${e.step}` : ''}: ${e.message}`)

describe('ctx.log', () => {
  for (const kind of ['memory', 'sqlite'] as const) {
    it(`keeps each entry with its level, attributes, time, attempt and step; a replay logs nothing twice (${kind})`, async () => {
      const store = kind === 'sqlite' ? new SqliteRunStore({ path: join(dir, `runs-${++files}.db`) }) : undefined
      const rt = runtime(
        [
          task(
            'work',
            async (ctx) => {
              ctx.log.info('begin', { order: 7 })
              await ctx.step.run('charge', () => {
                ctx.log.warn('slow card')
                return 1
              })
              await ctx.step.sleep('nap', 0.05)
              ctx.log.info('after the nap')
              if (ctx.attempt === 1) throw new Error('flaky')
              ctx.log.error('done')
            },
            { route: { retries: 1 } },
          ),
        ],
        store ? { store } : {},
      )
      const before = Date.now()
      const done = await finished(rt.waitForRun((await rt.trigger('work')).id))
      expect(done.status).toBe('completed')
      // The replay after the nap and the retry skip what was recorded; the
      // retry's entries past those are its own (attempt 2).
      expect(said(done)).toEqual(['1 info a1: begin', '2 warn a1 charge: slow card', '3 info a1: after the nap', '4 error a2: done'])
      expect(done.logs?.kept[0].attributes).toEqual({ order: 7 })
      expect(Date.parse(done.logs!.kept[0].at)).toBeGreaterThanOrEqual(before - 1)
      expect(done.logs?.dropped).toBe(0)
    })
  }

  it('keeps the last entries past its bound and counts the ones it dropped', async () => {
    const rt = runtime([
      task('chatty', (ctx) => {
        for (let i = 1; i <= MAX_RUN_LOGS + 20; i++) ctx.log.info(`line ${i}`)
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('chatty')).id))
    expect(done.logs?.kept).toHaveLength(MAX_RUN_LOGS)
    expect(done.logs?.dropped).toBe(20)
    expect(done.logs?.kept[0]).toMatchObject({ seq: 21, message: 'line 21' })
    expect(done.logs?.kept.at(-1)).toMatchObject({ seq: MAX_RUN_LOGS + 20 })
  })

  it('never throws: a long message is cut, and attributes it cannot keep are replaced by a note', async () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    const rt = runtime([
      task('odd', (ctx) => {
        ctx.log.info('x'.repeat(MAX_LOG_MESSAGE_LENGTH + 10))
        ctx.log.warn('cycle', cycle)
        ctx.log.warn('big', { blob: 'y'.repeat(MAX_LOG_ATTRIBUTES_BYTES) })
        ctx.log.warn('list', [1, 2] as never)
        ctx.log.error(new Error('an error as the message') as never)
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('odd')).id))
    const kept = done.logs!.kept
    expect(kept[0].message).toHaveLength(MAX_LOG_MESSAGE_LENGTH)
    expect(kept[0].message.endsWith('…')).toBe(true)
    expect(kept[1].attributes?.['svc.dropped']).toMatch(/^attributes cannot be kept as JSON: /)
    expect(kept[2].attributes?.['svc.dropped']).toMatch(/over the 8,192-byte limit/)
    expect(kept[3].attributes?.['svc.dropped']).toMatch(/^attributes must be an object/)
    expect(kept[4].message).toBe('an error as the message')
  })

  it('logs an entry made after the attempt ended to the process log, saying it was not kept', async () => {
    const logger = recordingLogger()
    let late: (() => void) | undefined
    const rt = runtime(
      [
        task('early', (ctx) => {
          late = () => ctx.log.info('too late')
        }),
      ],
      { logger },
    )
    const done = await finished(rt.waitForRun((await rt.trigger('early')).id))
    late!()
    expect(logger.text('warn')).toMatch(/ctx\.log\.info was called after attempt 1 ended; not kept: too late/)
    expect((await rt.getRun(done.id))?.logs).toBeUndefined()
  })

  it('prints each entry with its task and run id under printRunLogs, as svc dev does', async () => {
    const logger = recordingLogger()
    const rt = runtime(
      [
        task('jobs.tell', async (ctx) => {
          ctx.log.warn('careful', { n: 1 })
          await ctx.step.run('s', () => ctx.log.info('in a step'))
        }),
      ],
      { logger, printRunLogs: true },
    )
    const run = await rt.trigger('jobs.tell')
    await finished(rt.waitForRun(run.id))
    expect(logger.text('warn')).toContain(`[jobs.tell ${run.id} attempt 1] careful {"n":1}`)
    expect(logger.text('info')).toContain(`[jobs.tell ${run.id} attempt 1 step s] in a step`)
  })
})

describe('GET /__tasks/runs/<id>/logs, a page at a time', () => {
  it('pages with after and limit, tells the next page by cursor, and refuses bad parameters', async () => {
    const rt = runtime([
      task('chatty', (ctx) => {
        for (let i = 1; i <= MAX_RUN_LOGS + 5; i++) ctx.log.info(`line ${i}`)
      }),
    ])
    const run = await finished(rt.waitForRun((await rt.trigger('chatty')).id))
    const page = (query: string) => runLogPage(run, new URLSearchParams(query))
    const first = page('')
    expect(first.entries.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 6))
    expect(first).toMatchObject({ id: run.id, taskName: 'chatty', status: 'completed', dropped: 5, cursor: 105 })
    const next = page(`after=${first.cursor}&limit=1000`)
    expect(next.entries[0].seq).toBe(106)
    expect(next.entries.at(-1)?.seq).toBe(MAX_RUN_LOGS + 5)
    expect(next.cursor).toBeUndefined()
    expect(page(`after=${MAX_RUN_LOGS + 5}`).entries).toEqual([])
    expect(() => page('after=-1')).toThrow(/after must be a log entry seq, 0 or more/)
    expect(() => page('limit=0')).toThrow(/limit must be a whole number from 1 to 1000/)
    expect(() => page('level=warn')).toThrow(/Unknown query parameter "level"/)
  })
})

describe('step timings', () => {
  it('records when each step began and how long it took; a wait lasts from the suspension to its end', async () => {
    const rt = runtime([
      task('timed', async (ctx) => {
        await ctx.step.run('slow', () => new Promise((resolve) => setTimeout(resolve, 60)))
        await ctx.step.sleep('nap', 0.15)
        await ctx.step.run('quick', () => 1)
      }),
    ])
    const run = await rt.trigger('timed')
    const suspended = await until(async () => {
      const latest = await rt.getRun(run.id)
      return latest?.status === 'suspended' ? latest : undefined
    })
    expect(Date.parse(suspended.suspended!.since!)).toBeGreaterThanOrEqual(Date.parse(suspended.steps.slow.startedAt!))
    const done = await finished(rt.waitForRun(run.id))
    const { slow, nap, quick } = done.steps
    expect(slow.durationMs).toBeGreaterThanOrEqual(55)
    expect(nap.startedAt).toBe(suspended.suspended!.since)
    expect(nap.durationMs).toBeGreaterThanOrEqual(140)
    expect(Date.parse(nap.startedAt!)).toBeGreaterThanOrEqual(Date.parse(slow.startedAt!) + slow.durationMs!)
    expect(Date.parse(quick.startedAt!)).toBeGreaterThanOrEqual(Date.parse(nap.startedAt!) + nap.durationMs!)
    // The attempt spans its executions and the wait between them, from its first start to its end.
    const [attempt] = done.attempts
    expect(Date.parse(attempt.startedAt)).toBeLessThanOrEqual(Date.parse(slow.startedAt!))
    expect(Date.parse(attempt.startedAt) + attempt.durationMs).toBeGreaterThanOrEqual(Date.parse(quick.startedAt!) + quick.durationMs!)
    expect(suspended.attemptStarted).toEqual({ attempt: 1, at: attempt.startedAt })
    expect(done.attemptStarted).toBeUndefined()
  })
})
