import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { RunCancelledError } from '../../src/runtime/errors.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { deferred, finished, runtime, sleep, task, until } from './_helpers.ts'

describe('attempt timeouts', () => {
  it('attempts of one timeout each time out, in the order they started', async () => {
    const aborted: number[] = []
    const rt = runtime([
      task(
        'hang',
        (ctx) => {
          ctx.signal.addEventListener('abort', () => aborted.push(ctx.input.n))
          return new Promise(() => {})
        },
        { route: { timeout: 30 } },
      ),
    ])
    const runs = []
    for (const n of [1, 2, 3]) {
      runs.push(await rt.trigger('hang', { n }))
      await sleep(5)
    }
    const done = await Promise.all(runs.map((run) => finished(rt.waitForRun(run.id))))
    expect(done.map((run) => [run.status, run.attempts[0].error])).toEqual([
      ['failed', 'Attempt 1 timed out after 30 ms'],
      ['failed', 'Attempt 1 timed out after 30 ms'],
      ['failed', 'Attempt 1 timed out after 30 ms'],
    ])
    expect(aborted).toEqual([1, 2, 3])
  })

  it('a shorter timeout started later times out first, and a longer one keeps its attempt running', async () => {
    const release = deferred()
    const rt = runtime([
      task('long', () => release.promise.then(() => 'in time'), { route: { timeout: 60_000 } }),
      task('short', () => new Promise(() => {}), { route: { timeout: 20 } }),
    ])
    const long = await rt.trigger('long')
    const short = await rt.trigger('short')
    expect((await finished(rt.waitForRun(short.id))).attempts[0].error).toBe('Attempt 1 timed out after 20 ms')
    expect((await rt.getRun(long.id))?.status).toBe('running')
    release.resolve()
    expect(await finished(rt.waitForRun(long.id))).toMatchObject({ status: 'completed', result: 'in time' })
  })

  it('an attempt that ends in time is not timed out later, and the next attempt of its timeout still is', async () => {
    const rt = runtime([
      task('maybe', (ctx) => (ctx.input.hang ? new Promise(() => {}) : sleep(5).then(() => 'quick')), { route: { timeout: 40 } }),
    ])
    const quick = await rt.trigger('maybe', { hang: false })
    const stuck = await rt.trigger('maybe', { hang: true })
    expect(await finished(rt.waitForRun(quick.id))).toMatchObject({ status: 'completed', result: 'quick' })
    expect((await finished(rt.waitForRun(stuck.id))).attempts[0].error).toBe('Attempt 1 timed out after 40 ms')
    await sleep(60)
    expect(await rt.getRun(quick.id)).toMatchObject({ status: 'completed', result: 'quick', attempts: [{ index: 1 }] })
  })

  it('a timed-out attempt that retries times out again, with its own attempt number', async () => {
    const rt = runtime([task('never', () => new Promise(() => {}), { route: { timeout: 20, retries: 1 } })])
    const run = await rt.trigger('never')
    // The second attempt starts after a backoff of 100 ms, on an empty list of its timeout.
    const done = await finished(rt.waitForRun(run.id))
    expect(done.attempts.map((attempt) => attempt.error)).toEqual(['Attempt 1 timed out after 20 ms', 'Attempt 2 timed out after 20 ms'])
  })

  it('a process whose attempts all ended exits on its own, though their timeouts were long', () => {
    const script = fileURLToPath(new URL('./_ended-attempts.ts', import.meta.url))
    const result = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 10_000 })
    expect(result.stderr).toBe('')
    expect(result.stdout.trim()).toBe('completed completed completed')
    expect(result.signal).toBeNull()
    expect(result.status).toBe(0)
  })
})

describe('ctx.signal, made on first use', () => {
  it('read for the first time after its attempt timed out, it is already aborted with the TimeoutError', async () => {
    const read = deferred<AbortSignal>()
    const rt = runtime([
      task(
        'late',
        async (ctx) => {
          await sleep(60)
          read.resolve(ctx.signal)
        },
        { route: { timeout: 20 } },
      ),
    ])
    const run = await rt.trigger('late')
    expect((await finished(rt.waitForRun(run.id))).status).toBe('failed')
    const signal = await read.promise
    expect(signal.aborted).toBe(true)
    expect((signal.reason as Error).name).toBe('TimeoutError')
    expect((signal.reason as Error).message).toBe('Attempt 1 timed out after 20 ms')
  })

  it('read for the first time after its run was cancelled, it is already aborted with the RunCancelledError', async () => {
    const release = deferred()
    const read = deferred<AbortSignal>()
    const rt = runtime([
      task('late', async (ctx) => {
        await release.promise
        read.resolve(ctx.signal)
      }),
    ])
    const run = await rt.trigger('late')
    await rt.cancel(run.id)
    release.resolve()
    const signal = await read.promise
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(RunCancelledError)
  })

  it('read before anything happened, it is not aborted, and aborts when the run is cancelled', async () => {
    const read = deferred<AbortSignal>()
    const rt = runtime([
      task('early', (ctx) => {
        read.resolve(ctx.signal)
        return new Promise(() => {})
      }),
    ])
    const run = await rt.trigger('early')
    const signal = await read.promise
    expect(signal.aborted).toBe(false)
    await rt.cancel(run.id)
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(RunCancelledError)
  })
})

describe('steps after an attempt ended', () => {
  it('a step called after its attempt timed out does not run, and says the attempt timed out', async () => {
    const release = deferred()
    let late: unknown
    let ran = false
    const rt = runtime([
      task(
        'slow',
        async (ctx) => {
          await ctx.step.run('first', () => 1)
          await release.promise
          try {
            await ctx.step.run('second', () => {
              ran = true
            })
          } catch (error) {
            late = error
          }
        },
        { route: { timeout: 30 } },
      ),
    ])
    const run = await rt.trigger('slow')
    const done = await finished(rt.waitForRun(run.id))
    expect(done.attempts[0].error).toBe('Attempt 1 timed out after 30 ms')
    release.resolve()
    await until(() => late !== undefined)
    expect((late as Error).message).toMatch(
      /ctx\.step\.run\("second"\) was called after attempt 1 of task "slow" timed out; the step did not run/,
    )
    expect(ran).toBe(false)
  })
})

describe('waiters of a run in flight', () => {
  it('every waiter of a run gets its end, whether it asked before the attempt ended or after', async () => {
    const release = deferred()
    const rt = runtime([task('gated', () => release.promise.then(() => 'out'))])
    const run = await rt.trigger('gated')
    const early = [rt.waitForRun(run.id), rt.waitForRun(run.id), rt.waitForRun(run.id)]
    release.resolve()
    const ends = await Promise.all(early.map(finished))
    const late = await finished(rt.waitForRun(run.id))
    for (const end of [...ends, late]) expect(end).toMatchObject({ id: run.id, status: 'completed', result: 'out' })
  })

  it('every waiter of a run still in flight rejects when the runtime closes, one or several per run', async () => {
    const rt = runtime([task('stuck', () => new Promise(() => {}))])
    const one = await rt.trigger('stuck')
    const two = await rt.trigger('stuck')
    const waits = [rt.waitForRun(one.id), rt.waitForRun(two.id), rt.waitForRun(two.id)]
    await rt.close()
    for (const wait of waits) await expect(wait).rejects.toThrow('The task runtime closed before the run finished')
  })

  it('a waiter of a run that is not in flight here is answered from the store once the run ends', async () => {
    const rt = runtime([task('later', () => 'done')])
    const run = await rt.trigger('later', undefined, { delaySeconds: 0.03 })
    const waits = [rt.waitForRun(run.id), rt.waitForRun(run.id)]
    await until(async () => (await rt.getRun(run.id))?.status === 'completed')
    for (const end of await Promise.all(waits.map(finished))) expect(end).toMatchObject({ status: 'completed', result: 'done' })
  })
})

describe('waiters of a run not in flight here', () => {
  /** A memory store whose next read, once armed, answers only after `until` settles, with what it read before. */
  class LateReads extends MemoryRunStore {
    until: Promise<unknown> | undefined
    override async getRun(id: string): Promise<RunRecord | undefined> {
      const run = await super.getRun(id)
      const until = this.until
      this.until = undefined
      if (until) await until
      return run
    }
  }

  it('a waiter whose read saw the run unfinished, and whose run then finished before it was registered, still gets the end', async () => {
    const store = new LateReads()
    const rt = runtime([task('later', () => 'done')], { store })
    const run = await rt.trigger('later', undefined, { delaySeconds: 0.03 })
    const ended = new Promise<void>((resolve) => {
      rt.onRunChange!((change) => {
        if (change.id === run.id && change.status === 'completed') resolve()
      })
    })
    // The waiter's read sees the run scheduled, and answers only once the run has completed.
    store.until = ended
    const end = await finished(rt.waitForRun(run.id))
    expect(end).toMatchObject({ id: run.id, status: 'completed', result: 'done' })
  })

  it('a waiter of a run that finished is answered after the runtime closed; one of a live run is rejected', async () => {
    const rt = runtime([task('quick', () => 'done'), task('later', () => 'never')])
    const done = await rt.trigger('quick')
    await finished(rt.waitForRun(done.id))
    const later = await rt.trigger('later', undefined, { delaySeconds: 60 })
    await rt.close()
    expect(await rt.waitForRun(done.id)).toMatchObject({ status: 'completed', result: 'done' })
    await expect(rt.waitForRun(later.id)).rejects.toThrow('The task runtime closed before the run finished')
    await expect(rt.waitForRun('nope')).rejects.toThrow('The task runtime closed before the run finished')
  })
})
