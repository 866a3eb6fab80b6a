/**
 * "Wake now" (`TaskRuntime.wake`): an operator's way to end a run's wait on
 * time at once. A run suspended on `ctx.step.sleep` or `sleepUntil` has its
 * sleep timer set again, due now; a delayed run (`scheduled`) has its
 * `runAt` and its delay timer moved to now. The timer then fires as any
 * other (taken, or claimed on a store several processes share, and acted
 * on in `waitpoints.ts`), so the sleep step is recorded met and the run
 * replays, or the delayed run starts, exactly as when its time comes.
 * Every other run is refused, saying what it waits on instead and what
 * resumes it. Edge-safe.
 */
import type { RunRecord } from '../../types.ts'
import { RunFinishedError, RunNotFoundError, RunNotSleepingError } from '../../errors.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { timerId } from '../base/ids.ts'
import { isFinished, type RunStore, type TimerRecord } from '../store/store.ts'
import { unknownWaitpoint } from '../steps/waitpoint-kinds.ts'

export interface WakeParts {
  store: RunStore
  clock: Clock
  /** Records a timer and arms it in-process (`Waitpoints.arm`). */
  arm(timer: TimerRecord): Promise<void>
}

/**
 * Sets the timer that ends run `id`'s wait on time due now, and resolves to
 * the run as recorded then: the timer fires a moment later, so a woken run
 * may still read `suspended` or `scheduled`.
 */
export async function wakeRun(parts: WakeParts, id: string): Promise<RunRecord> {
  const { store, clock } = parts
  for (;;) {
    const run = await store.getRun(id)
    if (!run) throw new RunNotFoundError(id)
    if (isFinished(run.status)) throw new RunFinishedError(id, run.status, 'woken')
    const now = isoNowOf(clock)
    if (run.status === 'scheduled') {
      // The delay's timer checks `runAt` again when it fires (a debounced
      // trigger moves it later), so `runAt` moves first.
      const moved = await store.updateRun(id, { runAt: now }, { status: 'scheduled' })
      // It started meanwhile: look at it again.
      if (!moved) continue
      await parts.arm({ id: timerId(id, 'delay'), runId: id, kind: 'delay', dueAt: now })
      return moved
    }
    const wait = run.status === 'suspended' ? run.suspended : undefined
    if (wait?.waitpoint.type === 'sleep') {
      const { stepKey } = wait
      await parts.arm({ id: timerId(id, 'sleep', stepKey), runId: id, kind: 'sleep', stepKey, dueAt: now })
      return run
    }
    throw new RunNotSleepingError(id, run.status, waitsOn(run))
  }
}

/** What a live run that is not sleeping waits on, and what resumes it, for `RunNotSleepingError`. */
function waitsOn(run: RunRecord): string {
  if (run.status === 'running') return 'it is running (or waits for its next attempt after a failure); it needs no waking'
  if (run.status === 'queued') {
    return "it is queued for a slot under its task's concurrency or rate limit, and starts as one frees; cancel it, or raise the limit"
  }
  const wait = run.suspended
  if (!wait) return `it is ${run.status}`
  const { stepKey, waitpoint } = wait
  switch (waitpoint.type) {
    case 'sleep':
      return `it sleeps at step "${stepKey}"`
    case 'token':
      return waitpoint.callback
        ? `it waits at step "${stepKey}" for a request to its callback URL (token "${waitpoint.tokenId}"); send it, or complete the token (completeToken()), to resume it`
        : `it waits at step "${stepKey}" on token "${waitpoint.tokenId}"; complete the token (completeToken(), or POST /__tasks/tokens/<token>) to resume it`
    case 'event':
      return `it waits at step "${stepKey}" for event "${waitpoint.name}"; send the event (sendEvent(), or POST /__events/${waitpoint.name}) to resume it`
    case 'signal':
      return `it waits at step "${stepKey}" for signal "${waitpoint.signal}"; send it (sendSignal(), or POST /__tasks/runs/${run.id}/signals/${waitpoint.signal}) to resume it`
    case 'task':
      return `it waits at step "${stepKey}" for child run ${waitpoint.runId} of task "${waitpoint.task}", and resumes when that run finishes; wake or finish that run`
    default:
      return unknownWaitpoint(waitpoint)
  }
}
