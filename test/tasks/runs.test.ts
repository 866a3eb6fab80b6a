import { describe, expect, it } from 'vitest'
import { TaskNotFoundError, ValidationError } from '../../src/runtime/errors.ts'
import { defineSchema } from '../../src/runtime/schema.ts'
import * as v from 'valibot'
import { runtime, sleep, task } from './_helpers.ts'

describe('run states (spec "States and transitions")', () => {
  it('a valid trigger resolves at once with status running and does not wait for the handler', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime([task('slow', async () => gate.then(() => 'done'))])
    const run = await rt.trigger('slow')
    expect(run.status).toBe('running')
    expect(run.ok).toBe(true)
    expect(run.attempts).toEqual([])
    expect((await rt.getRun(run.id))?.status).toBe('running')
    release()
    const done = await rt.waitForRun(run.id)
    expect(done.status).toBe('completed')
    expect(done.result).toBe('done')
  })

  it('an invalid payload creates no run, invokes no handler and consumes no attempt', async () => {
    let calls = 0
    const input = v.object({ to: v.string() })
    const rt = runtime([task('mail', () => calls++, { input })])
    const error = await rt.trigger('mail', { to: 42 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ValidationError)
    expect((error as ValidationError).code).toBe('VALIDATION_FAILED')
    expect((error as ValidationError).details[0]).toMatchObject({ target: 'input', path: ['to'] })
    expect(await rt.listRuns()).toEqual([])
    expect(calls).toBe(0)
  })

  it('a defineSchema({ body }) input validates the payload as body', async () => {
    const rt = runtime([task('mail', (ctx) => ctx.input, { input: defineSchema({ body: v.object({ to: v.string() }) }) })])
    const bad = await rt.trigger('mail', {}).catch((e: unknown) => e)
    expect((bad as ValidationError).details[0].target).toBe('body')
    const run = await rt.trigger('mail', { to: 'a@b.c' })
    expect((await rt.waitForRun(run.id)).result).toEqual({ to: 'a@b.c' })
  })

  it('an unknown task name rejects with TaskNotFoundError listing the available tasks', async () => {
    const rt = runtime([task('report', () => 1), task('jobs.notify', () => 2)])
    const error = await rt.trigger('nope').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TaskNotFoundError)
    expect((error as Error).message).toContain('report, jobs.notify')
  })

  it('a handler that returns completes the run with ok true and the result', async () => {
    const rt = runtime([task('sum', (ctx) => ctx.input.a + ctx.input.b)])
    const run = await rt.trigger('sum', { a: 2, b: 3 })
    const done = await rt.waitForRun(run.id)
    expect(done).toMatchObject({ status: 'completed', ok: true, result: 5, taskName: 'sum', steps: {} })
    expect(done.attempts).toHaveLength(1)
    expect(done.attempts[0].index).toBe(1)
    expect(done.attempts[0].error).toBeUndefined()
    expect(Number.isNaN(Date.parse(done.attempts[0].startedAt))).toBe(false)
    expect(done.attempts[0].durationMs).toBeGreaterThanOrEqual(0)
    expect(done.finishedAt).toBeTypeOf('string')
  })

  it('a throwing attempt with retries left runs again with ctx.attempt incremented', async () => {
    const seen: number[] = []
    const rt = runtime([
      task(
        'flaky',
        (ctx) => {
          seen.push(ctx.attempt)
          if (ctx.attempt < 2) throw new Error('boom')
          return 'ok'
        },
        { route: { retries: 2 } },
      ),
    ])
    const done = await rt.waitForRun((await rt.trigger('flaky')).id)
    expect(seen).toEqual([1, 2])
    expect(done.status).toBe('completed')
    expect(done.attempts.map((a) => a.error)).toEqual(['boom', undefined])
    expect(rt.logger.text('warn')).toContain('attempt 1 of 3 failed')
  })

  it('with no retries left the run fails with ok false and every attempt recorded, message only', async () => {
    const rt = runtime([
      task(
        'broken',
        (ctx) => {
          throw new Error(`fail ${ctx.attempt}`)
        },
        { route: { retries: 1 } },
      ),
    ])
    const done = await rt.waitForRun((await rt.trigger('broken')).id)
    expect(done.status).toBe('failed')
    expect(done.ok).toBe(false)
    expect(done.result).toBeUndefined()
    expect(done.attempts.map((a) => [a.index, a.error])).toEqual([
      [1, 'fail 1'],
      [2, 'fail 2'],
    ])
    expect(JSON.stringify(done)).not.toContain('    at ')
    expect(rt.logger.text('error')).toMatch(/task "broken" failed after 2 attempts .*fail 2/)
  })

  it('a synchronous throw and a thrown non-Error both become message strings', async () => {
    const rt = runtime([
      task('str', () => {
        throw 'plain string'
      }),
      task('obj', async () => {
        throw { reason: 'nope' }
      }),
    ])
    const a = await rt.waitForRun((await rt.trigger('str')).id)
    const b = await rt.waitForRun((await rt.trigger('obj')).id)
    expect(a.attempts[0].error).toBe('plain string')
    expect(b.attempts[0].error).toBe('{"reason":"nope"}')
  })

  it('an attempt that exceeds its timeout fails with a clear message and aborts ctx.signal', async () => {
    let signal: AbortSignal | undefined
    const rt = runtime([
      task(
        'hang',
        async (ctx) => {
          signal = ctx.signal
          await sleep(500)
          return 'late'
        },
        { route: { timeout: 30 } },
      ),
    ])
    const done = await rt.waitForRun((await rt.trigger('hang')).id)
    expect(done.status).toBe('failed')
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 30 ms')
    expect(signal?.aborted).toBe(true)
    expect((signal?.reason as Error).name).toBe('TimeoutError')
  })

  it('a timed-out attempt retries when retries remain', async () => {
    const rt = runtime([
      task(
        'slowfirst',
        async (ctx) => {
          if (ctx.attempt === 1) await sleep(200)
          return ctx.attempt
        },
        { route: { timeout: 25, retries: 1 } },
      ),
    ])
    const done = await rt.waitForRun((await rt.trigger('slowfirst')).id)
    expect(done.result).toBe(2)
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 25 ms')
  })

  it('a handler can stop its work when ctx.signal aborts', async () => {
    let stoppedEarly = false
    const rt = runtime([
      task(
        'cooperative',
        (ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => {
              stoppedEarly = true
              reject(ctx.signal.reason)
            })
          }),
        { route: { timeout: 20 } },
      ),
    ])
    await rt.waitForRun((await rt.trigger('cooperative')).id)
    expect(stoppedEarly).toBe(true)
  })
})
