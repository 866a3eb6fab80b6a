/**
 * What brings a waiting run back. A suspended run's waitpoint (a sleep, a
 * child run, a token) records the awaited step once it is met and hands
 * the same run back to the engine, which replays it from its first line
 * (suspended → running, or queued under a limit). A scheduled run's delay,
 * a retry's backoff and a rate window freeing a place are timers too.
 *
 * Every timer is recorded in the store before it is armed in-process
 * (`in-process-timers.ts`), so a durable store can re-arm it after a
 * restart (`rearm`), and on a shared store the process that claims it acts
 * on it. Callers of `waitForRun()`, who wait for a run's end rather than
 * a run that waits, are `wait-for-run.ts`.
 *
 * The engine creates one `Waitpoints`; it reaches the rest of the engine
 * only through the callbacks it is given.
 */
import type { CompleteTokenResult, Logger, RunRecord, StepRecord } from '../../types.ts'
import { errorMessage, LeaseLostError } from '../../errors.ts'
import { timerId } from '../base/ids.ts'
import { type Clock, isoNowOf } from '../base/clock.ts'
import { assertPayload } from '../store/payload-limit.ts'
import { stepTiming, waitedStepKind } from './steps.ts'
import type { EventRecord, RunStore, SharedWork, TimerRecord, TokenRecord } from '../store/store.ts'
import { createTimerSet, type TimerSet } from '../base/in-process-timers.ts'
import { deliverEvent, settleFromRecorded } from './wait-for-event.ts'
import { deliverSignal } from './signal-waits.ts'
import type { ShardChildren } from './shard-children.ts'
import { ChildWaits } from './child-waits.ts'
import { unknownWaitpoint } from './waitpoint-kinds.ts'
import { expireRun } from './deadlines.ts'
import { settledStep, tokenStep, tokenTimeout } from './token-waits.ts'

export interface WaitpointsOptions {
  store: RunStore
  logger: Logger
  /** Unreference in-process timers where the platform supports it. */
  unrefTimers: boolean
  /** What timers are armed on and deadlines compared with. */
  clock: Clock
  /** The largest token payload, in bytes of UTF-8 JSON (`maxPayloadBytes`). */
  maxPayloadBytes: number
  /** Starts an invocation of a run that is now `running`, or looks for a slot for one now `queued`. */
  dispatch(run: RunRecord): void
  /**
   * The status a run of this task takes when it may start (a delay ran out,
   * a waitpoint was met): `queued` when the task's flow control decides.
   */
  startStatus(taskName: string): 'running' | 'queued'
  /** A rate limit's window of this run's task freed a place (a `queue` timer). */
  windowFreed(runId: string): Promise<void>
  /** A run that waited failed at its deadline (a `deadline` timer; its timers are dropped already): what follows its end. */
  expired(run: RunRecord): void
  /** A runtime schedule's tick came due (a `schedule` timer): its run starts, and the next tick is set (runtime-schedules.ts). */
  scheduleDue(scheduleId: string, dueAt: string): Promise<void>
  /**
   * On a shared store, the engine's id: a timer is claimed under it, acted
   * on, then removed, so one that a process claimed and never finished
   * (it died) goes back to the others once the claim lapses.
   */
  owner?: string
  /** On a runtime that is one shard of several: the children that live in other shards (shard-children.ts). */
  children?: ShardChildren
}

export class Waitpoints {
  readonly #store: RunStore
  readonly #logger: Logger
  readonly #dispatch: (run: RunRecord) => void
  readonly #startStatus: (taskName: string) => 'running' | 'queued'
  readonly #windowFreed: (runId: string) => Promise<void>
  readonly #expired: (run: RunRecord) => void
  readonly #scheduleDue: (scheduleId: string, dueAt: string) => Promise<void>
  readonly #timers: TimerSet
  readonly #clock: Clock
  readonly #shared: SharedWork | undefined
  readonly #owner: string
  readonly #maxPayloadBytes: number
  /** Runs waiting for a child run (child-waits.ts). */
  readonly #childWaits: ChildWaits
  #closed = false

  constructor(options: WaitpointsOptions) {
    this.#store = options.store
    this.#logger = options.logger
    this.#dispatch = options.dispatch
    this.#startStatus = options.startStatus
    this.#windowFreed = options.windowFreed
    this.#expired = options.expired
    this.#scheduleDue = options.scheduleDue
    this.#clock = options.clock
    this.#timers = createTimerSet({ unref: options.unrefTimers, clock: options.clock })
    this.#shared = options.store.shared
    this.#owner = options.owner ?? ''
    this.#maxPayloadBytes = options.maxPayloadBytes
    this.#childWaits = new ChildWaits({
      store: this.#store,
      logger: this.#logger,
      children: options.children,
      clock: options.clock,
      resume: (runId, stepKey, step) => this.#resume(runId, stepKey, step),
      arm: (timer) => this.arm(timer),
      dropTimer: (id) => this.dropTimer(id),
    })
  }

  /** Records a timer, then arms it in-process (not after `close()`: the record stays for a durable store). */
  async arm(timer: TimerRecord): Promise<void> {
    await this.#store.saveTimer(timer)
    this.#schedule(timer)
  }

  /** Arms in-process every timer the store holds (after a restart) and returns them. */
  async rearm(): Promise<TimerRecord[]> {
    const timers = await this.#store.listTimers()
    for (const timer of timers) this.#schedule(timer)
    return timers
  }

  /**
   * Arranges for a suspended run's waitpoint to resume it, and resumes it at
   * once if the waitpoint was met while the run was suspending (a fast child,
   * a token completed in between).
   */
  async armWaitpoint(run: RunRecord): Promise<void> {
    if (run.status !== 'suspended' || !run.suspended) return
    const { stepKey, waitpoint } = run.suspended
    switch (waitpoint.type) {
      case 'sleep': {
        const id = timerId(run.id, 'sleep', stepKey)
        await this.arm({ id, runId: run.id, kind: 'sleep', stepKey, dueAt: waitpoint.until })
        return
      }
      case 'token': {
        if (waitpoint.timeoutAt !== undefined) await this.arm(tokenTimeout(run.id, stepKey, waitpoint.tokenId, waitpoint.timeoutAt))
        const token = await this.#store.getToken(waitpoint.tokenId)
        if (token && token.status !== 'waiting') await this.#resume(run.id, stepKey, tokenStep(token.status, token.payload))
        return
      }
      case 'event': {
        if (waitpoint.timeoutAt !== undefined) await this.arm(tokenTimeout(run.id, stepKey, waitpoint.tokenId, waitpoint.timeoutAt))
        // The second look (wait-for-event.ts): an event sent while the run was suspending meets it now.
        const token = await this.#store.getToken(waitpoint.tokenId)
        const settled = token?.status === 'waiting' ? await settleFromRecorded(this.#store, waitpoint) : token
        if (settled && settled.status !== 'waiting') await this.#tokenWaitMet(run.id, stepKey, settled)
        return
      }
      case 'signal': {
        if (waitpoint.timeoutAt !== undefined) await this.arm(tokenTimeout(run.id, stepKey, waitpoint.tokenId, waitpoint.timeoutAt))
        // The second look (signal-waits.ts): a signal sent while the run was suspending meets it now.
        const token = await this.#store.takeSignal!(waitpoint.tokenId, waitpoint.signal)
        if (token && token.status !== 'waiting') await this.#tokenWaitMet(run.id, stepKey, token)
        return
      }
      case 'task':
        return this.#childWaits.arm(run, stepKey, waitpoint.runId)
      default:
        unknownWaitpoint(waitpoint)
    }
  }

  /**
   * A run reached `completed`, `failed` or `cancelled`: resume the run that started it and
   * every other suspended run that waits for it. Never rejects; a failure is
   * logged with the task.
   */
  finished(run: RunRecord): void {
    this.#childWaits.finished(run)
    // Its deadline no longer matters: the timer would find it finished.
    if (run.deadline !== undefined) {
      this.dropTimer(timerId(run.id, 'deadline')).catch((error: unknown) =>
        this.#logger.warn(`[svc] task runtime: the deadline timer of finished run ${run.id} stays until it is due: ${errorMessage(error)}`),
      )
    }
  }

  /** Completes a `waitForToken` token and resumes its run. */
  async completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
    if (typeof tokenId !== 'string' || tokenId === '') {
      throw new TypeError(`completeToken(tokenId): tokenId must be a non-empty string (got ${typeof tokenId})`)
    }
    // The payload becomes the step's output in the run record.
    assertPayload(
      payload,
      this.#maxPayloadBytes,
      `completeToken("${tokenId}"): the payload cannot be stored as JSON`,
      `The payload of token "${tokenId}" is`,
    )
    // A deadline is armed as a timer only while the run is suspended on that
    // token; one that passed while the run waited elsewhere (parallel waits)
    // still wins over a late completion.
    const waiting = await this.#store.getToken(tokenId)
    // An event wait's token is settled by a matching event only.
    if (waiting?.kind === 'event') return 'not_found'
    // A cancelled run takes no more input; its token stays as it was.
    if (waiting?.status === 'waiting' && (await this.#store.getRun(waiting.runId))?.status === 'cancelled') return 'run_cancelled'
    if (waiting?.status === 'waiting' && waiting.timeoutAt !== undefined && Date.parse(waiting.timeoutAt) <= this.#clock.now()) {
      const expired = await this.#store.settleToken(tokenId, 'timed_out')
      if (expired?.settled) {
        await this.#dropTokenTimer(expired.token)
        await this.#resume(expired.token.runId, expired.token.stepKey, { status: 'timed_out' })
        return 'timed_out'
      }
    }
    const result = await this.#store.settleToken(tokenId, 'completed', payload)
    if (!result) return 'not_found'
    const { settled, token } = result
    if (!settled) return token.status === 'timed_out' ? 'timed_out' : 'already_completed'
    await this.#dropTokenTimer(token)
    await this.#resume(token.runId, token.stepKey, tokenStep('completed', payload))
    return 'completed'
  }

  /**
   * Resumes every run suspended on a wait that `event` meets: its name,
   * sent within the wait's window, with data that holds the wait's match.
   * Each wait's token is settled once, by whichever event or look comes
   * first; resolves to the runs whose wait `event` met (the wait's own
   * second look may be the one to resume it). Reads the runs suspended on
   * an event of its name page by page (`RunQuery.waitingForEvent`, indexed
   * on the durable stores); a store that does not know the filter lists
   * every suspended run, which the checks here then sort out.
   */
  deliverEvent(event: EventRecord): Promise<string[]> {
    return deliverEvent(this.#store, event, (run, token) => this.#tokenWaitMet(run.id, run.suspended!.stepKey, token))
  }

  /**
   * A signal named `name` was kept for `run`: resumes the run if it is
   * suspended on a wait the signal meets (signal-waits.ts); resolves to
   * whether it did.
   */
  deliverSignal(run: RunRecord, name: string): Promise<boolean> {
    return deliverSignal(this.#store, run, name, (stepKey, token) => this.#tokenWaitMet(run.id, stepKey, token))
  }

  /** The token of an event's or a signal's wait is settled: its deadline goes, and the run resumes with what settled it. */
  async #tokenWaitMet(runId: string, stepKey: string, token: TokenRecord): Promise<boolean> {
    await this.#dropTokenTimer(token)
    return this.#resume(runId, stepKey, settledStep(token))
  }

  /**
   * Removes every timer of a run, in-process and in the store, so nothing
   * fires for it again, here or after a restart (a cancelled run).
   */
  async dropRun(runId: string): Promise<void> {
    const store = this.#store
    if (store.dropTimersOf) {
      for (const id of await store.dropTimersOf(runId)) this.#timers.clear(id)
      return
    }
    for (const timer of await store.listTimers()) {
      if (timer.runId !== runId) continue
      this.#timers.clear(timer.id)
      await store.takeTimer(timer.id)
    }
  }

  /** Clears every in-process timer; from now on timers are recorded but not armed, and none fires. */
  close(): void {
    this.#closed = true
    this.#timers.clearAll()
  }

  /**
   * Records the step a waitpoint was waiting on and re-dispatches the run. A
   * no-op (false) when the run is no longer suspended at that step, so every
   * path that may resume a run can try without coordination.
   */
  async #resume(runId: string, stepKey: string, step: StepRecord): Promise<boolean> {
    const run = await this.#store.getRun(runId)
    if (run?.status !== 'suspended' || run.suspended?.stepKey !== stepKey) return false
    try {
      // A wait lasts from the suspension (records written before it was kept have no time).
      const since = Date.parse(run.suspended.since ?? '')
      const timing = Number.isNaN(since) ? {} : stepTiming(since, this.#clock.now())
      await this.#store.saveStep(runId, stepKey, { ...step, kind: waitedStepKind(run.suspended.waitpoint), ...timing })
    } catch (error) {
      // This process still held the run from the attempt that suspended it,
      // and another path resumed it in between (a send and the wait's own
      // look, say), which moved its fence on: that path resumes it.
      if (error instanceof LeaseLostError) return false
      throw error
    }
    const status = this.#startStatus(run.taskName)
    const resumed = await this.#store.updateRun(runId, { status, suspended: undefined }, { status: 'suspended' })
    if (!resumed) return false
    this.#dispatch(resumed)
    return true
  }

  /** `child`, a run of another shard, finished: its parent here resumes if it waits for it (`ShardHere.childFinished`). */
  childFinishedElsewhere(child: RunRecord): Promise<void> {
    return this.#childWaits.childFinishedElsewhere(child)
  }

  #schedule(timer: TimerRecord): void {
    if (this.#closed) return
    this.#timers.set(timer.id, Date.parse(timer.dueAt), () => {
      this.#fire(timer.id).catch((error) =>
        this.#logger.error(`[svc] task runtime: timer ${timer.id} of run ${timer.runId} failed: ${errorMessage(error)}`),
      )
    })
  }

  /** Acts on a timer this engine claimed on a shared store (`SharedWork.claimDueTimers`), then removes it. */
  async fireClaimed(timer: TimerRecord): Promise<void> {
    if (this.#closed) return
    this.#timers.clear(timer.id)
    await this.#act(timer)
    await this.#shared!.finishTimer(this.#owner, timer.id)
  }

  async #fire(id: string): Promise<void> {
    if (this.#closed) return
    if (this.#shared) {
      const timer = await this.#shared.claimTimer(this.#owner, id)
      if (timer) await this.fireClaimed(timer)
      return
    }
    // Taking the timer is the claim: whoever removes it acts on it.
    const timer = await this.#store.takeTimer(id)
    if (timer) await this.#act(timer)
  }

  /**
   * What a timer does. Each case is a compare-and-set on the run or token,
   * so acting twice on one timer (a claim that lapsed while its process
   * was still acting) changes nothing the second time.
   */
  async #act(timer: TimerRecord): Promise<void> {
    switch (timer.kind) {
      case 'delay': {
        const scheduled = await this.#store.getRun(timer.runId)
        if (scheduled?.status !== 'scheduled') return
        // A debounced trigger moved the start later after this timer was taken.
        if (scheduled.runAt !== undefined && Date.parse(scheduled.runAt) > this.#clock.now()) {
          await this.arm({ ...timer, dueAt: scheduled.runAt })
          return
        }
        // A queued run gets its start time when a slot lets it start.
        const patch =
          this.#startStatus(scheduled.taskName) === 'queued'
            ? { status: 'queued' as const }
            : { status: 'running' as const, startedAt: isoNowOf(this.#clock) }
        const run = await this.#store.updateRun(timer.runId, patch, { status: 'scheduled' })
        if (run) this.#dispatch(run)
        return
      }
      case 'queue':
        await this.#windowFreed(timer.runId)
        return
      case 'retry': {
        const run = await this.#store.getRun(timer.runId)
        if (run?.status === 'running') this.#dispatch(run)
        return
      }
      case 'sleep':
        await this.#resume(timer.runId, timer.stepKey!, { status: 'completed' })
        return
      case 'token-timeout': {
        const settled = await this.#store.settleToken(timer.tokenId!, 'timed_out')
        if (settled?.settled) await this.#resume(timer.runId, timer.stepKey!, { status: 'timed_out' })
        return
      }
      case 'child': {
        // Still waiting on that step: look at the child again.
        const run = await this.#store.getRun(timer.runId)
        if (run?.status === 'suspended' && run.suspended?.stepKey === timer.stepKey) await this.armWaitpoint(run)
        return
      }
      case 'deadline': {
        const failed = await expireRun(this.#store, this.#clock, timer.runId, (next) => this.arm(next))
        if (!failed) return
        await this.dropRun(failed.id)
        // Past its deadline with steps to undo: it runs its compensations.
        if (failed.status === 'running') this.#dispatch(failed)
        else this.#expired(failed)
        return
      }
      case 'schedule':
        await this.#scheduleDue(timer.runId, timer.dueAt)
    }
  }

  /** Clears the timeout timer of a token that has just been settled. */
  async #dropTokenTimer(token: TokenRecord): Promise<void> {
    await this.dropTimer(timerId(token.runId, 'token-timeout', token.stepKey))
  }

  /** Removes timer `id`, in the store and in-process. */
  async dropTimer(id: string): Promise<void> {
    this.#timers.clear(id)
    await this.#store.takeTimer(id)
  }
}
