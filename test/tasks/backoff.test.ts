import { afterEach, describe, expect, it, vi } from 'vitest'
import { backoffDelay } from '../../src/runtime/tasks/index.ts'
import { runtime, task } from './_helpers.ts'

describe('backoff: 100 × 2^(attempt−1) ms, capped at 30 s', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('doubles from 100 ms and caps at 30,000 ms', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map(backoffDelay)).toEqual([
      100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000,
    ])
    expect(backoffDelay(10_000)).toBe(30_000)
  })

  it('rejects an attempt number that is not a positive integer', () => {
    expect(() => backoffDelay(0)).toThrow(/\(got 0\)/)
    expect(() => backoffDelay(1.5)).toThrow(RangeError)
  })

  it('the runner waits exactly the backoff before each next attempt', async () => {
    vi.useFakeTimers()
    const starts: number[] = []
    const rt = runtime([
      task(
        'always-fails',
        () => {
          starts.push(Date.now())
          throw new Error('nope')
        },
        { route: { retries: 10 } },
      ),
    ])
    const t0 = Date.now()
    const run = await rt.trigger('always-fails')
    await vi.advanceTimersByTimeAsync(0)
    expect(starts).toHaveLength(1)
    const gaps = [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000]
    for (const [i, gap] of gaps.entries()) {
      await vi.advanceTimersByTimeAsync(gap - 1)
      expect(starts).toHaveLength(i + 1)
      await vi.advanceTimersByTimeAsync(1)
      expect(starts).toHaveLength(i + 2)
    }
    expect(starts.map((s) => s - t0)).toEqual([0, 100, 300, 700, 1500, 3100, 6300, 12700, 25500, 51100, 81100])
    const done = await rt.getRun(run.id)
    expect(done?.status).toBe('failed')
    expect(done?.attempts).toHaveLength(11)
  })
})
