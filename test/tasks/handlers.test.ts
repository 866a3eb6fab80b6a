import { describe, expect, it, vi } from 'vitest'
import { finished, finishedAfter, runtime, task } from './_helpers.ts'

describe('how a handler ends its attempt', () => {
  it('a synchronous handler that returns a value completes the run with one attempt', async () => {
    const rt = runtime([task('sum', (ctx) => ctx.input.a + ctx.input.b)])
    const done = await finished(rt.waitForRun((await rt.trigger('sum', { a: 2, b: 3 })).id))
    expect(done).toMatchObject({ status: 'completed', ok: true, result: 5 })
    expect(done.attempts).toHaveLength(1)
    expect(done.attempts[0]).toMatchObject({ index: 1 })
    expect(done.attempts[0].startedAt <= done.finishedAt!).toBe(true)
  })

  it('a synchronous throw fails the attempt with its message', async () => {
    const rt = runtime([
      task('broken', () => {
        throw new Error('no such row')
      }),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('broken')).id))
    expect(done.status).toBe('failed')
    expect(done.attempts.map((attempt) => attempt.error)).toEqual(['no such row'])
  })

  it('a thenable that is not a promise is awaited, as await would', async () => {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is the point of this test
    const thenable = { then: (resolve: (value: number) => void) => setTimeout(() => resolve(7), 5) }
    const rt = runtime([task('later', () => thenable)])
    const done = await finished(rt.waitForRun((await rt.trigger('later')).id))
    expect(done).toMatchObject({ status: 'completed', result: 7 })
  })

  it('a plain object with no then method is the result itself', async () => {
    // biome-ignore lint/suspicious/noThenProperty: a then field that is not a method is the point of this test
    const result = { rows: 3, then: 'not a function' }
    const rt = runtime([task('report', () => result)])
    const done = await finished(rt.waitForRun((await rt.trigger('report')).id))
    expect(done.result).toEqual(result)
  })

  it('ctx can be destructured, step and signal included', async () => {
    const rt = runtime([
      task('double', async ({ step, signal, input, attempt, runId, taskName }) => {
        const doubled = await step.run('double', () => input.n * 2)
        return { doubled, aborted: signal.aborted, attempt, sameRun: typeof runId === 'string', taskName }
      }),
    ])
    const run = await rt.trigger('double', { n: 21 })
    const done = await finished(rt.waitForRun(run.id))
    expect(done.result).toEqual({ doubled: 42, aborted: false, attempt: 1, sameRun: true, taskName: 'double' })
    expect(Object.keys(done.steps)).toEqual(['double'])
  })

  it('a synchronous retry that skips the steps an earlier attempt recorded completes and names them in a warning', async () => {
    vi.useFakeTimers()
    const rt = runtime([
      task(
        'flaky',
        (ctx) =>
          ctx.attempt === 1
            ? ctx.step
                .run('fetch', () => 1)
                .then(() => {
                  throw new Error('boom')
                })
            : 'done',
        { route: { retries: 1 } },
      ),
    ])
    const done = await finishedAfter(rt, (await rt.trigger('flaky')).id, 100) // the backoff before attempt 2
    expect(done).toMatchObject({ status: 'completed', result: 'done' })
    expect(rt.logger.text('warn')).toContain(`run ${done.id} finished without reaching its recorded step "fetch"`)
  })

  it('a retry that awaits before its first step still replays the steps an earlier attempt recorded, and one that never reaches them names them', async () => {
    vi.useFakeTimers()
    let ran = 0
    const rt = runtime([
      task(
        'late',
        async (ctx) => {
          await Promise.resolve()
          const value = await ctx.step.run('fetch', () => ++ran)
          if (ctx.attempt === 1) throw new Error('boom')
          return value
        },
        { route: { retries: 1 } },
      ),
      task(
        'skips',
        async (ctx) => {
          if (ctx.attempt === 1) {
            await ctx.step.run('fetch', () => 1)
            throw new Error('boom')
          }
          await Promise.resolve()
          return 'done'
        },
        { route: { retries: 1 } },
      ),
    ])
    const late = await finishedAfter(rt, (await rt.trigger('late')).id, 100)
    expect(late).toMatchObject({ status: 'completed', result: 1 })
    expect(ran).toBe(1)
    const skips = await finishedAfter(rt, (await rt.trigger('skips')).id, 100)
    expect(skips).toMatchObject({ status: 'completed', result: 'done' })
    expect(rt.logger.text('warn')).toContain(`run ${skips.id} finished without reaching its recorded step "fetch"`)
    expect(rt.logger.text('warn')).not.toContain(`run ${late.id} finished without reaching`)
  })

  it('an async handler past its timeout fails the attempt, and its signal is aborted', async () => {
    let signal: AbortSignal | undefined
    const rt = runtime([
      task(
        'stuck',
        (ctx) => {
          signal = ctx.signal
          return new Promise(() => {})
        },
        { route: { timeout: 20 } },
      ),
    ])
    const done = await finished(rt.waitForRun((await rt.trigger('stuck')).id))
    expect(done.status).toBe('failed')
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 20 ms')
    expect(signal?.aborted).toBe(true)
  })
})
