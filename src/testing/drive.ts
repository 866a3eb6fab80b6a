/**
 * How a test runtime moves its virtual clock: it fires what is due one
 * timer at a time, each at its own instant, and lets the engine go quiet
 * (settle.ts) before the next. On a store several processes share, a timer
 * only the store holds (one a restart or `deploy` left to its sweeps)
 * comes due through the store's next due time and is claimed by a sweep.
 */
import type { RunRecord, TaskRuntime } from '../types.ts'
import type { RunStore } from '../runtime/tasks/store/store.ts'
import type { Activity } from './settle.ts'
import type { VirtualClock } from './virtual-clock.ts'

export interface DriverParts {
  clock: VirtualClock
  activity: Activity
  store: RunStore
  /** How long the engine may stay busy without the clock moving, in real milliseconds. */
  settleMs: number
  /** The runtime now (a new one after `t.deploy`). */
  runtime: () => TaskRuntime
}

export class ClockDriver {
  readonly #parts: DriverParts

  constructor(parts: DriverParts) {
    this.#parts = parts
  }

  /** Waits until the engine is quiet (settle.ts), or throws naming the runs that keep it busy. */
  readonly settle = async (where: string): Promise<void> => {
    if (await this.#parts.activity.settle(this.#parts.settleMs)) return
    const running = await this.#parts.runtime().listRuns({ status: 'running' })
    throw new Error(
      `${where}: the runtime was still busy after ${this.#parts.settleMs} ms of real time with no move of the clock (${running.map((run) => `run ${run.id} of "${run.taskName}"`).join(', ') || 'no run running'}). A step that loops or awaits without end keeps it busy; mock it with t.mockStep(task, stepKey, output)`,
    )
  }

  /**
   * When the next thing is due: a timer on the clock, or, on a store several
   * processes share, a timer kept there that no engine holds in-process
   * (one a restart or `deploy` left to the store's sweeps).
   */
  async #nextDue(): Promise<number | undefined> {
    const local = this.#parts.clock.nextDue()
    const kept = await this.#parts.store.shared?.nextDueAt()
    const stored = kept === undefined ? undefined : Date.parse(kept)
    return local === undefined ? stored : stored === undefined ? local : Math.min(local, stored)
  }

  /** Fires what is due next if it is due by `until`, and lets what it starts run; false when nothing is. */
  async #fireNext(until: number, where: string): Promise<boolean> {
    const at = await this.#nextDue()
    if (at === undefined || at > until) return false
    if (this.#parts.clock.nextDue() === at) this.#parts.clock.fireNext(until)
    else {
      // A timer only the store holds: claimed by a sweep, as a process that polls the store would.
      this.#parts.clock.moveTo(at)
      await this.#parts.runtime().sweep?.({ untilMs: Date.now() })
    }
    await this.settle(where)
    return true
  }

  /** Fires what comes due up to `until`, one timer at a time, each at its instant. */
  async fireUntil(until: number, where: string, maxTimers = Number.POSITIVE_INFINITY): Promise<void> {
    await this.settle(where)
    for (let fired = 0; await this.#fireNext(until, where); fired++) {
      if (fired >= maxTimers)
        throw new Error(
          `${where}: ${maxTimers} timers fired and runs still had more due; a task that starts itself again without end does this`,
        )
    }
  }

  /** The live runs the clock still moves: all but those waiting, however deep, on a token or event with no timeout. */
  async #movingRuns(): Promise<RunRecord[]> {
    const live = await this.#parts.runtime().listRuns({ status: ['scheduled', 'queued', 'running', 'suspended'] })
    const byId = new Map(live.map((run) => [run.id, run]))
    const onTest = (run: RunRecord, seen: Set<string>): boolean => {
      const waitpoint = run.suspended?.waitpoint
      if (!waitpoint) return false
      if (waitpoint.type === 'token' || waitpoint.type === 'event') return waitpoint.timeoutAt === undefined
      if (waitpoint.type !== 'task') return false
      const child = byId.get(waitpoint.runId)
      return child !== undefined && !seen.has(child.id) && onTest(child, seen.add(child.id))
    }
    return live.filter((run) => !onTest(run, new Set([run.id])))
  }

  /** Jumps from due time to due time until every run has finished or waits on what only the test can give. */
  async advanceUntilIdle(where: string, maxTimers = 10_000): Promise<void> {
    await this.settle(where)
    for (let fired = 0; ; fired++) {
      const moving = await this.#movingRuns()
      if (moving.length === 0) return
      if ((await this.#nextDue()) === undefined) {
        // Only runs that wait on one another, or a handler on real time: give it that time.
        const running = moving.filter((run) => run.status === 'running')
        if (running.length === 0) return
        await this.#parts.activity.wait(Math.min(this.#parts.settleMs, 50))
        await this.settle(where)
        if ((await this.#nextDue()) === undefined && (await this.#movingRuns()).some((run) => run.status === 'running')) {
          throw new Error(
            `${where}: ${running.map((run) => `run ${run.id} of "${run.taskName}"`).join(', ')} is running, and nothing the clock moves is due: a step awaits real time or I/O; mock it with t.mockStep(task, stepKey, output)`,
          )
        }
        continue
      }
      if (fired >= maxTimers) {
        throw new Error(
          `${where}: ${maxTimers} timers fired and ${moving.length} run(s) still had more due; a task that starts itself again without end does this`,
        )
      }
      await this.#fireNext(Number.POSITIVE_INFINITY, where)
    }
  }
}

function _endless(where: string, maxTimers: number): Error {
  return new Error(`${where}: ${maxTimers} timers fired and runs still had more due; a task that starts itself again without end does this`)
}
