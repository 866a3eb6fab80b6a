/**
 * The runtime's clock (`TaskRuntimeOptions.clock`): every time the engine
 * reads and every timer it sets is the clock's, so a runtime on a clock the
 * test moves runs a month of sleeps, backoffs, deadlines and event lookback
 * in milliseconds of wall time, with run records stamped in the clock's
 * time. And no read of the real time slips back into the engine unnoticed.
 * Also the text of record timestamps.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { backoffDelay } from '../../src/runtime/tasks/base/backoff.ts'
import { isoAt, isoNowOf, systemClock } from '../../src/runtime/tasks/base/clock.ts'
import { VirtualClock } from '../../src/testing/virtual-clock.ts'
import type { RunRecord, TaskContext } from '../../src/types.ts'
import { runtime, task } from './_helpers.ts'

// Real turns of the event loop, whatever a test fakes.
const realSetImmediate = setImmediate
const realNow = Date.now

const START = Date.parse('2001-01-01T00:00:00Z')
const SECOND = 1000
const DAY = 86_400 * SECOND

/** The virtual clock of svcjs/testing, moved by the test: each timer due by `at` fires at its own instant, and what it starts runs before the next. */
class ManualClock extends VirtualClock {
  async advanceTo(at: number): Promise<void> {
    await settle()
    while (this.fireNext(at)) await settle()
    this.moveTo(at)
    await settle()
  }
}

/** A few real macrotask turns: every microtask the engine queued runs in between. */
async function settle(turns = 5): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise((resolve) => realSetImmediate(resolve))
}

describe('record timestamps', () => {
  it('are the ISO 8601 text of their millisecond, whether or not it was stamped just before', () => {
    const instants = [0, 1, 1, 1_700_000_000_123, 1_700_000_000_123, 1_700_000_000_124, 1.9, 1_700_000_000_000 + 0.5]
    for (const ms of instants) expect(isoAt(ms)).toBe(new Date(ms).toISOString())
  })

  it("are the clock's time", () => {
    expect(isoNowOf(new ManualClock(START))).toBe('2001-01-01T00:00:00.000Z')
  })
})

beforeEach(() => {
  // Real timers: nothing here may move forward on the wall clock, and the clock given is the only time.
  vi.useRealTimers()
})

function onClock(routes: Parameters<typeof runtime>[0]) {
  const clock = new ManualClock(START)
  const rt = runtime(routes, { clock })
  return { clock, rt }
}

async function runOf(rt: ReturnType<typeof runtime>, id: string): Promise<RunRecord> {
  const run = await rt.getRun(id)
  if (!run) throw new Error(`run ${id} is gone`)
  return run
}

describe('systemClock', () => {
  it('reads Date.now, setTimeout and clearTimeout when called, so fake timers installed later move it', () => {
    vi.useFakeTimers({ now: START })
    expect(systemClock.now()).toBe(START)
    const fired: string[] = []
    systemClock.setTimer(() => fired.push('kept'), 1000, true)
    systemClock.clearTimer(systemClock.setTimer(() => fired.push('cleared'), 500, false))
    systemClock.clearTimer(undefined)
    vi.advanceTimersByTime(1000)
    expect(fired).toEqual(['kept'])
    expect(systemClock.now()).toBe(START + 1000)
  })
})

describe('a runtime on a clock the test moves', () => {
  it('finishes a 30-day sleep after 30 virtual days and not after 29, stamped in virtual time, in far less wall time', async () => {
    const wallStart = realNow()
    const { clock, rt } = onClock([
      task('nap', async (ctx: TaskContext) => {
        await ctx.step.sleep('month', 30 * 86_400)
        return 'rested'
      }),
    ])
    const { id } = await rt.trigger('nap')
    await clock.advanceTo(START + 29 * DAY)
    const waiting = await runOf(rt, id)
    expect(waiting.status).toBe('suspended')
    expect(waiting.suspended?.waitpoint).toEqual({ type: 'sleep', until: '2001-01-31T00:00:00.000Z' })
    await clock.advanceTo(START + 30 * DAY)
    const done = await runOf(rt, id)
    expect(done.status).toBe('completed')
    expect(done.result).toBe('rested')
    expect(done.createdAt).toBe('2001-01-01T00:00:00.000Z')
    expect(done.startedAt).toBe('2001-01-01T00:00:00.000Z')
    expect(done.finishedAt).toBe('2001-01-31T00:00:00.000Z')
    expect(done.steps.month).toMatchObject({ status: 'completed', startedAt: '2001-01-01T00:00:00.000Z', durationMs: 30 * DAY })
    expect(done.attempts).toEqual([{ index: 1, startedAt: '2001-01-01T00:00:00.000Z', durationMs: 30 * DAY }])
    // The run id's time is the clock's too (UUIDv7: the first 48 bits).
    expect(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toBe(START)
    expect(realNow() - wallStart).toBeLessThan(5_000)
  })

  it('retries with backoff at the virtual instants the backoff gives', async () => {
    const { clock, rt } = onClock([
      task(
        'flaky',
        (ctx: TaskContext) => {
          if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} failed`)
          return ctx.attempt
        },
        { route: { retries: 2 } },
      ),
    ])
    const { id } = await rt.trigger('flaky')
    await clock.advanceTo(START)
    expect((await runOf(rt, id)).attempts).toHaveLength(1)
    const second = START + backoffDelay(1)
    expect(clock.dueTimes()).toContain(second)
    await clock.advanceTo(second - 1)
    expect((await runOf(rt, id)).attempts).toHaveLength(1)
    await clock.advanceTo(second)
    const afterSecond = await runOf(rt, id)
    expect(afterSecond.attempts.map((attempt) => attempt.startedAt)).toEqual(['2001-01-01T00:00:00.000Z', new Date(second).toISOString()])
    const third = second + backoffDelay(2)
    expect(clock.dueTimes()).toContain(third)
    await clock.advanceTo(third - 1)
    expect((await runOf(rt, id)).status).toBe('running')
    await clock.advanceTo(third)
    const done = await runOf(rt, id)
    expect(done.status).toBe('completed')
    expect(done.result).toBe(3)
    expect(done.finishedAt).toBe(new Date(third).toISOString())
  })

  it('times a token wait out exactly at its instant', async () => {
    const { clock, rt } = onClock([task('approve', (ctx: TaskContext) => ctx.step.waitForToken('approval', { timeoutSeconds: 3600 }))])
    const { id } = await rt.trigger('approve')
    await clock.advanceTo(START + 3600 * SECOND - 1)
    const waiting = await runOf(rt, id)
    expect(waiting.status).toBe('suspended')
    expect(waiting.suspended?.waitpoint).toMatchObject({ type: 'token', timeoutAt: '2001-01-01T01:00:00.000Z' })
    await clock.advanceTo(START + 3600 * SECOND)
    const done = await runOf(rt, id)
    expect(done.status).toBe('completed')
    expect(done.result).toEqual({ timedOut: true })
    expect(done.finishedAt).toBe('2001-01-01T01:00:00.000Z')
  })

  it('meets a wait with lookback with an event sent before it, and prunes events by the clock', async () => {
    const { clock, rt } = onClock([
      task('await-paid', (ctx: TaskContext) => ctx.step.waitForEvent('paid', 'order.paid', { lookbackSeconds: 86_400 })),
    ])
    await rt.sendEvent('order.paid', { order: 1 })
    expect((await rt.listEvents({ name: 'order.paid' })).events.map((event) => event.time)).toEqual(['2001-01-01T00:00:00.000Z'])
    // Another event, an hour on: its put prunes the events held past their
    // retention, which on the wall clock would be every event of 2001.
    await clock.advanceTo(START + 3600 * SECOND)
    await rt.sendEvent('order.shipped', { order: 1 })
    const { id } = await rt.trigger('await-paid')
    await clock.advanceTo(clock.now())
    const done = await runOf(rt, id)
    expect(done.status).toBe('completed')
    expect(done.result).toMatchObject({ event: { name: 'order.paid', data: { order: 1 }, time: '2001-01-01T00:00:00.000Z' } })
    // A day and more later on the clock, the first event is past its
    // retention, and the next put prunes it.
    await clock.advanceTo(START + 25 * 3600 * SECOND)
    await rt.sendEvent('order.shipped', { order: 2 })
    expect((await rt.listEvents({ name: 'order.paid' })).events).toEqual([])
  })

  it('times an attempt out on the clock', async () => {
    let signal: AbortSignal | undefined
    const { clock, rt } = onClock([
      task(
        'hang',
        (ctx: TaskContext) => {
          signal = ctx.signal
          return new Promise(() => {})
        },
        { route: { timeout: 600_000 } },
      ),
    ])
    const { id } = await rt.trigger('hang')
    await clock.advanceTo(START + 600_000 - 1)
    expect((await runOf(rt, id)).status).toBe('running')
    expect(signal?.aborted).toBe(false)
    await clock.advanceTo(START + 600_000)
    const done = await runOf(rt, id)
    expect(done.status).toBe('failed')
    expect(done.attempts).toEqual([
      { index: 1, startedAt: '2001-01-01T00:00:00.000Z', durationMs: 600_000, error: 'Attempt 1 timed out after 600000 ms' },
    ])
    expect(done.finishedAt).toBe('2001-01-01T00:10:00.000Z')
    expect((signal?.reason as Error | undefined)?.name).toBe('TimeoutError')
  })
})

/**
 * The engine's reads of the real time. Each is a real-time bound or a
 * store-failure backoff, never the time of a run; any other read of the
 * real time in src/runtime/tasks fails the test below.
 */
const WALL_CLOCK_READS: Record<string, { lines: readonly string[]; why: string }> = {
  'base/clock.ts': { lines: ['now: () => Date.now(),'], why: 'systemClock itself, the default clock' },
  'sql/kit-calls.ts': {
    lines: ['putEvent: async (event) => runs.write(putEventSql(event, Date.now())),'],
    why: "the SQL stores' event retention, on the time of the database's host: they take no clock",
  },
  'definitions/options.ts': {
    lines: [
      '`${where()}: deadline must be an instant, not a duration (got ${describe(shown)}, before 2000); for a time from now, pass new Date(Date.now() + ms), or set route.maxDuration`,',
    ],
    why: 'an error message that shows the caller the code to write',
  },
  'base/ids.ts': {
    lines: ['export function newRunId(now: number = Date.now(), shard?: number): string {'],
    why: 'the default for callers outside the engine; the engine passes its clock’s time',
  },
  'engine/engine.ts': {
    lines: [
      'const deadline = Date.now() + timeoutMs',
      'const left = deadline - Date.now()',
      'while (this.#dispatch.size > 0 && Date.now() < untilMs) {',
      'await this.#dispatch.allOver(Math.min(untilMs - Date.now(), renewEvery))',
    ],
    why: 'drain() and sweep() budgets: how long a process or a function call really has',
  },
  'engine/outcome-writes.ts': {
    lines: ['if (Date.now() - logged >= LOG_EVERY_MS) {', 'logged = Date.now()'],
    why: 'throttles the log of a store write that keeps failing, in real time',
  },
  'schedule/croner-clock.ts': {
    lines: ['await ticks.onTick(self.currentRun() ?? new Date())'],
    why: 'croner ticks on the wall clock; a runtime on another clock uses a cron clock on that clock',
  },
}

const TASKS_DIR = join(import.meta.dirname, '../../src/runtime/tasks')
const TIME_READ = /Date\.now\(|new Date\(\)|performance\.now\(/

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

describe('the engine reads the time from its clock', () => {
  it('has no read of the real time in src/runtime/tasks but the wall-clock uses listed here', () => {
    const unexpected: string[] = []
    const seen = new Set<string>()
    for (const path of sourceFiles(TASKS_DIR)) {
      const file = relative(TASKS_DIR, path).split('\\').join('/')
      readFileSync(path, 'utf8')
        .split('\n')
        .forEach((text, i) => {
          if (!TIME_READ.test(text) || text.trim().startsWith('//') || text.trim().startsWith('*')) return
          const line = text.trim()
          if (WALL_CLOCK_READS[file]?.lines.includes(line)) seen.add(`${file}: ${line}`)
          else unexpected.push(`src/runtime/tasks/${file}:${i + 1}: ${line}`)
        })
    }
    expect(
      unexpected,
      'These lines read the real time. Read it from the runtime’s clock instead (`clock.now()`, `isoNowOf(clock)` from base/clock.ts, ' +
        'handed to each part by engineParts), or, for a real-time bound that is not the time of a run, add the line to WALL_CLOCK_READS with its reason',
    ).toEqual([])
    // An allowlisted line that no longer exists is dropped from the list.
    const listed = Object.entries(WALL_CLOCK_READS).flatMap(([file, { lines }]) => lines.map((line) => `${file}: ${line}`))
    expect(listed.filter((line) => !seen.has(line))).toEqual([])
  })
})
