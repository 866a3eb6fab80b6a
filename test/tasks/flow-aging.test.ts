/**
 * Priority aging: a queued run's weight is its priority plus the points it
 * gained per second it waited (`route.priorityAging`), so newer runs of a
 * higher priority delay it for a bounded time. `planStarts` on its own,
 * then through a runtime under sustained load.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DEFAULT_PRIORITY_AGING } from '../../src/runtime/rules.ts'
import { describeFlow, type FlowLimits, type FlowRun, planStarts } from '../../src/runtime/tasks/flow/flow.ts'
import { MemoryRunStore } from '../../src/runtime/tasks/index.ts'
import type { RunRecord } from '../../src/types.ts'
import { runtime, sleep, task } from './_helpers.ts'

const NOW = Date.parse('2025-01-01T01:00:00.000Z')
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString()

/** A queued run created `waited` seconds before `NOW`. */
function queued(id: string, priority: number, waited: number, extra: Partial<FlowRun> = {}): FlowRun {
  return { id, input: {}, createdAt: ago(waited), ...(priority === 0 ? {} : { priority }), ...extra }
}

/** The order in which one slot at a time would start `runs` (creation order) at `NOW`. */
function order(limits: Omit<FlowLimits, 'concurrency'>, runs: FlowRun[]): string[] {
  const started: string[] = []
  let waiting = runs
  while (waiting.length > 0) {
    const [next] = planStarts({ ...limits, concurrency: { limit: 1 } }, waiting, [], [], NOW).start
    started.push(next.id)
    waiting = waiting.filter((run) => run !== next)
  }
  return started
}

describe('planStarts: priority aging', () => {
  it('an old low-priority run starts before newer high-priority runs once its wait outweighs the gap', () => {
    // Priority 10 is worth 10 s of waiting at one point a second.
    const runs = [queued('old', 0, 60), queued('within-gap', 10, 55), queued('past-gap', 10, 45)]
    expect(order({ priorityAging: 1 }, runs)).toEqual(['within-gap', 'old', 'past-gap'])
  })

  it('by default a point of priority is worth one second of waiting', () => {
    expect(DEFAULT_PRIORITY_AGING).toBe(1)
    const runs = [queued('old', 0, 60), queued('within-gap', 10, 55), queued('past-gap', 10, 45)]
    expect(order({}, runs)).toEqual(['within-gap', 'old', 'past-gap'])
  })

  it('a faster rate closes the same gap sooner', () => {
    const runs = [queued('old', 0, 60), queued('within-gap', 10, 55), queued('past-gap', 10, 45)]
    // At 10 points a second, priority 10 is worth 1 s.
    expect(order({ priorityAging: 10 }, runs)).toEqual(['old', 'within-gap', 'past-gap'])
  })

  it('priorityAging: false keeps strict order: priority, then creation order', () => {
    const runs = [queued('old', 0, 3600), queued('a', 10, 5), queued('low', -1, 7200), queued('b', 10, 1), queued('zero', 0, 0)]
    expect(order({ priorityAging: false }, runs)).toEqual(['a', 'b', 'old', 'zero', 'low'])
  })

  it('runs of equal weight start in creation order', () => {
    // 0 + 20 s and 10 + 10 s weigh the same at one point a second.
    const runs = [queued('first', 10, 10), queued('second', 0, 20), queued('third', 10, 10)]
    expect(order({}, runs)).toEqual(['first', 'second', 'third'])
  })

  it('a delayed run ages from its due time, so its delay earns it no place', () => {
    // Weights: 30 (due 30 s ago), 10 + 25, 10 + 1.
    const runs = [queued('delayed', 0, 3600, { runAt: ago(30) }), queued('older', 10, 25), queued('newer', 10, 1)]
    expect(order({}, runs)).toEqual(['older', 'delayed', 'newer'])
    // Within one priority too: the run due first has waited longest.
    const same = [queued('due-later', 0, 3600, { runAt: ago(5) }), queued('due-first', 0, 60)]
    expect(order({}, same)).toEqual(['due-first', 'due-later'])
  })

  it('a run that started before and queued again keeps the time it first became due', () => {
    const runs = [queued('resumed', 0, 30, { startedAt: ago(29) }), queued('fresh', 10, 1)]
    expect(order({}, runs)).toEqual(['resumed', 'fresh'])
  })

  it("a creation time ahead of now (another process's clock) counts as no wait", () => {
    const runs = [queued('ahead', 0, -60), queued('urgent', 1, 0)]
    expect(order({}, runs)).toEqual(['urgent', 'ahead'])
  })

  it('at the default rate a run at -1000 passes runs at 1000 created more than 2000 s after it', () => {
    const runs = [queued('lowest', -1000, 2100), queued('before-bound', 1000, 101), queued('after-bound', 1000, 99)]
    expect(order({}, runs)).toEqual(['before-bound', 'lowest', 'after-bound'])
  })

  it('aging reorders only what the limits let start: a full bucket still blocks', () => {
    const runs = [queued('old', 0, 600, { input: { user: 'a' } }), queued('new', 10, 0, { input: { user: 'b' } })]
    const running = [queued('busy', 0, 700, { input: { user: 'a' } })]
    const plan = planStarts({ concurrency: { limit: 1, key: 'input.user' } }, runs, running, [], NOW)
    expect(plan.start.map((run) => run.id)).toEqual(['new'])
  })

  it('the one-line description names an aging other than the default', () => {
    expect(describeFlow({ concurrency: { limit: 2 } })).toBe('concurrency 2')
    expect(describeFlow({ concurrency: { limit: 2 }, priorityAging: 0.1 })).toBe('concurrency 2, priority aging 0.1/s')
    expect(describeFlow({ concurrency: { limit: 2 }, priorityAging: false })).toBe('concurrency 2, strict priority')
  })
})

describe('priority aging under sustained load', () => {
  // Two slots, each attempt 20 ms: 100 starts a second. High-priority runs
  // come at twice that, so with strict order a low-priority run never finds
  // the queue empty of them. At 50 points a second, priority 10 is worth
  // 0.2 s: a low run starts before every high run created 0.2 s after it,
  // so the 20 low runs wait behind about 40 newer high runs, not all of them.
  const ATTEMPT_MS = 20
  const HIGH_EVERY_MS = 10
  const HIGHS_PER_TICK = 2

  let stop: (() => void) | undefined
  afterEach(() => stop?.())

  /** How many of 20 low-priority runs finished within `windowMs` while high-priority runs kept coming. */
  async function lowsFinishedWithin(priorityAging: number | false, windowMs: number): Promise<number> {
    const store = new MemoryRunStore()
    const rt = runtime([task('work', () => sleep(ATTEMPT_MS), { route: { concurrency: 2, priorityAging } })], { store })
    const lows: RunRecord[] = []
    for (let n = 0; n < 20; n++) lows.push(await rt.trigger('work', { low: n }))
    let highs = 0
    const stream = setInterval(() => {
      for (let i = 0; i < HIGHS_PER_TICK; i++) void rt.trigger('work', { high: highs++ }, { priority: 10 })
    }, HIGH_EVERY_MS)
    stop = () => clearInterval(stream)
    const ids = new Set(lows.map((run) => run.id))
    const lowsDone = async () => (await store.listRuns({ status: 'completed' })).filter((run) => ids.has(run.id)).length
    const deadline = Date.now() + windowMs
    let done = 0
    while (done < lows.length && Date.now() < deadline) {
      await sleep(20)
      done = await lowsDone()
    }
    stop()
    // The high runs kept coming faster than they could start: the load was sustained throughout.
    expect((await store.listRuns({ status: 'queued', limit: 1000 })).length).toBeGreaterThan(20)
    return done
  }

  it('20 low-priority runs behind high-priority runs at twice capacity all finish within 2 s', async () => {
    expect(await lowsFinishedWithin(50, 2000)).toBe(20)
  })

  it('with priorityAging: false the same load starves them', async () => {
    expect(await lowsFinishedWithin(false, 1000)).toBeLessThan(10)
  })
})
