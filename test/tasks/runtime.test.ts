import { describe, expect, it, vi } from 'vitest'
import { StoreFullError, SvcError } from '../../src/runtime/errors.ts'
import {
  MAX_DELAY_SECONDS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MemoryRunStore,
  createTaskRuntime,
  enqueue,
  setActiveTaskRuntime,
} from '../../src/runtime/tasks/index.ts'
import { finishedAfter, recordingLogger, runtime, sleep, task, until } from './_helpers.ts'

describe('delayed runs (EnqueueOptions.delaySeconds)', () => {
  it('a delayed run is scheduled first, then runs when due', async () => {
    const ran: number[] = []
    const rt = runtime([task('later', () => ran.push(Date.now()))])
    const t0 = Date.now()
    const run = await rt.trigger('later', undefined, { delaySeconds: 0.04 })
    expect(run.status).toBe('scheduled')
    expect(run.startedAt).toBeUndefined()
    expect(Date.parse(run.runAt!) - t0).toBeGreaterThanOrEqual(39)
    await sleep(10)
    expect((await rt.getRun(run.id))?.status).toBe('scheduled')
    expect(ran).toEqual([])
    const done = await rt.waitForRun(run.id)
    expect(done.status).toBe('completed')
    expect(ran[0] - t0).toBeGreaterThanOrEqual(39)
    expect(done.startedAt).toBeTypeOf('string')
  })

  it.each([[-1], [Number.NaN], [Infinity], ['5']])('delaySeconds %s is refused naming the option', async (bad) => {
    const rt = runtime([task('later', () => 1)])
    await expect(rt.trigger('later', undefined, { delaySeconds: bad as number })).rejects.toThrow(
      /delaySeconds must be a finite number of seconds, 0 or more \(got /,
    )
    expect(await rt.listRuns()).toEqual([])
  })

  it('delaySeconds past the 365-day maximum is a RangeError naming the limit, and starts no run', async () => {
    const rt = runtime([task('later', () => 1)])
    for (const bad of [MAX_DELAY_SECONDS + 1, 1e300]) {
      const error = await rt.trigger('later', undefined, { delaySeconds: bad }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RangeError)
      expect((error as Error).message).toBe(
        `trigger("later"): delaySeconds must be at most ${MAX_DELAY_SECONDS} seconds (365 days) (got ${bad})`,
      )
    }
    expect(await rt.listRuns()).toEqual([])
    const longest = await rt.trigger('later', undefined, { delaySeconds: MAX_DELAY_SECONDS })
    expect(longest.status).toBe('scheduled')
    expect(Date.parse(longest.runAt!) - Date.parse(longest.createdAt)).toBe(MAX_DELAY_SECONDS * 1000)
  })
})

describe('idempotency keys', () => {
  it('a key already seen returns the existing run instead of starting another', async () => {
    let calls = 0
    const rt = runtime([task('once', () => ++calls), task('other', () => 0)])
    const first = await rt.trigger('once', { a: 1 }, { idempotencyKey: 'order-7' })
    const second = await rt.trigger('once', { a: 2 }, { idempotencyKey: 'order-7' })
    expect(second.id).toBe(first.id)
    await rt.waitForRun(first.id)
    const third = await rt.trigger('once', undefined, { idempotencyKey: 'order-7' })
    expect(third).toMatchObject({ id: first.id, status: 'completed' })
    // Keys are per task.
    const elsewhere = await rt.trigger('other', undefined, { idempotencyKey: 'order-7' })
    expect(elsewhere.id).not.toBe(first.id)
    expect(calls).toBe(1)
  })

  it('an empty key is a TypeError', async () => {
    const rt = runtime([task('once', () => 1)])
    await expect(rt.trigger('once', undefined, { idempotencyKey: '' })).rejects.toThrow(
      /idempotencyKey must be a non-empty string \(got ""\)/,
    )
  })

  it('a key of whitespace only is refused: an HTTP header cannot carry it', async () => {
    const rt = runtime([task('once', () => 1)])
    await expect(rt.trigger('once', undefined, { idempotencyKey: ' \t ' })).rejects.toThrow(
      /trigger\("once"\): idempotencyKey must contain a character other than whitespace \(got " \\t "\)/,
    )
    expect(await rt.listRuns()).toEqual([])
  })

  it(`a key longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters is a RangeError naming the limit`, async () => {
    const rt = runtime([task('once', () => 1)])
    const error = await rt
      .trigger('once', undefined, { idempotencyKey: 'k'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH + 1) })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RangeError)
    expect((error as Error).message).toMatch(
      new RegExp(
        `^trigger\\("once"\\): idempotencyKey must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters \\(got ${MAX_IDEMPOTENCY_KEY_LENGTH + 1} characters\\)$`,
      ),
    )
    const longest = await rt.trigger('once', undefined, { idempotencyKey: 'k'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH) })
    expect(longest.idempotencyKey).toHaveLength(MAX_IDEMPOTENCY_KEY_LENGTH)
  })
})

describe('a full run store', () => {
  it('refuses a new run with StoreFullError (503 STORE_FULL) once live runs reach maxRuns, delayed runs included', async () => {
    const rt = runtime([task('later', () => 1)], { maxRuns: 3 })
    const delayed = []
    for (let i = 0; i < 3; i++) delayed.push(await rt.trigger('later', undefined, { delaySeconds: 3600 }))
    const error = await rt.trigger('later', undefined, { delaySeconds: 3600 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreFullError)
    expect(error).toBeInstanceOf(SvcError)
    expect(error).toMatchObject({ code: 'STORE_FULL', status: 503 })
    expect((error as Error).message).toMatch(/^MemoryRunStore is full: 3 runs are live/)
    expect((await rt.listRuns()).map((r) => r.id).sort()).toEqual(delayed.map((r) => r.id).sort())
  })

  it('in-process enqueue rejects with the same error', async () => {
    const rt = runtime([task('later', () => 1)], { maxRuns: 1 })
    setActiveTaskRuntime(rt)
    try {
      await enqueue('later', undefined, { delaySeconds: 60 })
      await expect(enqueue('later', undefined, { delaySeconds: 60 })).rejects.toMatchObject({ code: 'STORE_FULL', status: 503 })
    } finally {
      setActiveTaskRuntime(null)
    }
  })

  it('a child that cannot be stored fails the parent attempt with the reason, and the retry starts it once there is room', async () => {
    vi.useFakeTimers()
    let release!: () => void
    const blocker = new Promise<void>((resolve) => (release = resolve))
    const rt = runtime(
      [
        task('hold', () => blocker),
        task('kid', () => 'kid done'),
        task(
          'parent',
          async (ctx) => {
            try {
              return await ctx.step.waitForTask('kid', 'kid')
            } finally {
              // Frees a slot; the retry comes after the backoff.
              if (ctx.attempt === 1) release()
            }
          },
          { route: { retries: 1 } },
        ),
      ],
      { maxRuns: 2 },
    )
    const held = await rt.trigger('hold')
    const parent = await rt.trigger('parent')
    const done = await finishedAfter(rt, parent.id, 100) // the backoff before attempt 2
    expect(done.attempts[0].error).toMatch(/^MemoryRunStore is full: 2 runs are live/)
    expect(done).toMatchObject({ status: 'completed', result: { ok: true, result: 'kid done' } })
    // The finished blocker made room, and was evicted for the child.
    expect(await rt.getRun(held.id)).toBeUndefined()
    expect(await rt.listRuns({ taskName: 'kid' })).toHaveLength(1)
  })

  it('with no retries left the parent fails with the reason, logged with its task', async () => {
    const rt = runtime(
      [task('hold', () => new Promise(() => {})), task('kid', () => 1), task('parent', (ctx) => ctx.step.enqueue('kid', 'kid'))],
      { maxRuns: 2 },
    )
    await rt.trigger('hold')
    const done = await rt.waitForRun((await rt.trigger('parent')).id)
    expect(done.status).toBe('failed')
    expect(done.attempts.map((a) => a.error)).toEqual([expect.stringMatching(/^MemoryRunStore is full/)])
    expect(rt.logger.text('error')).toMatch(/task "parent" failed after 1 attempt .*MemoryRunStore is full/)
    expect(await rt.listRuns({ taskName: 'kid' })).toEqual([])
  })
})

describe('waitForRun, drain and close', () => {
  it('waitForRun rejects for an unknown run id', async () => {
    const rt = runtime([task('a', () => 1)])
    await expect(rt.waitForRun('nope')).rejects.toThrow(/Unknown run "nope"/)
  })

  it('drain waits for in-flight attempts, and gives up after its timeout', async () => {
    const rt = runtime([task('slow', () => sleep(40).then(() => 'done')), task('stuck', () => sleep(300))])
    const run = await rt.trigger('slow')
    await rt.drain(1000)
    expect((await rt.getRun(run.id))?.status).toBe('completed')
    await rt.trigger('stuck')
    const t0 = Date.now()
    await rt.drain(30)
    expect(Date.now() - t0).toBeLessThan(200)
    expect(rt.logger.text('warn')).toContain('1 attempt(s) still in flight after 30 ms')
  })

  it('close clears pending timers, aborts in-flight attempts and rejects waiters', async () => {
    let signal: AbortSignal | undefined
    const rt = runtime([
      task('sleeper', async (ctx) => ctx.step.sleep('nap', 0.05)),
      task('busy', (ctx) => {
        signal = ctx.signal
        return sleep(100)
      }),
    ])
    const sleeper = await rt.trigger('sleeper')
    await until(async () => (await rt.getRun(sleeper.id))?.status === 'suspended')
    const delayed = await rt.trigger('sleeper', undefined, { delaySeconds: 0.05 })
    const busy = await rt.trigger('busy')
    const waiting = rt.waitForRun(sleeper.id)
    await rt.close()
    await expect(waiting).rejects.toThrow(/closed/)
    expect(signal?.aborted).toBe(true)
    await sleep(80)
    // The attempt cut short by close() is not charged to the task.
    expect(await rt.getRun(busy.id)).toMatchObject({ status: 'running', attempts: [] })
    expect((await rt.getRun(sleeper.id))?.status).toBe('suspended')
    expect((await rt.getRun(delayed.id))?.status).toBe('scheduled')
    await expect(rt.trigger('sleeper')).rejects.toThrow(/closed/)
  })

  it('a second runtime on the same store recovers timers, running runs and waits', async () => {
    const store = new MemoryRunStore()
    const logger = recordingLogger()
    const routes = [
      task('nap', async (ctx) => {
        await ctx.step.sleep('z', 0.04)
        return 'rested'
      }),
      task('later', () => 'late'),
    ]
    const first = createTaskRuntime({ routes, store, logger, env: {} })
    const napping = await first.trigger('nap')
    await until(async () => (await store.getRun(napping.id))?.status === 'suspended')
    const later = await first.trigger('later', undefined, { delaySeconds: 0.04 })
    await first.close()
    const second = createTaskRuntime({ routes, store, logger, env: {} })
    await second.recover()
    expect((await second.waitForRun(napping.id)).result).toBe('rested')
    expect((await second.waitForRun(later.id)).result).toBe('late')
    await second.close()
  })

  it('recover starts a delayed run whose delay timer was claimed by a process that then died', async () => {
    const store = new MemoryRunStore()
    const logger = recordingLogger()
    const routes = [task('later', () => 'late')]
    const first = createTaskRuntime({ routes, store, logger, env: {} })
    const later = await first.trigger('later', undefined, { delaySeconds: 0.02 })
    await first.close()
    // What a crash between takeTimer and the scheduled → running update leaves:
    // a scheduled run and no timer.
    expect(await store.takeTimer(`${later.id}:delay`)).toBeDefined()
    const second = createTaskRuntime({ routes, store, logger, env: {} })
    await second.recover()
    const done = await until(async () => {
      const run = await store.getRun(later.id)
      return run?.status === 'completed' ? run : undefined
    })
    expect(done.result).toBe('late')
    await second.close()
  })

  it('unrefTimers must be a boolean', () => {
    expect(() => createTaskRuntime({ routes: [], unrefTimers: 'yes' as unknown as boolean })).toThrow(
      /unrefTimers must be a boolean \(got "yes"\)/,
    )
  })
})
