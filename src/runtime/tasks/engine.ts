/**
 * The run state machine (spec "States and transitions"). Every transition
 * goes through the store with a compare-and-set on the run's status, so a
 * run is never dispatched twice for the same reason, and the same code path
 * serves in-process waits today and a durable store later.
 *
 *   (none) ──trigger──▶ running | scheduled ──delay──▶ running
 *   running ──returns──▶ completed
 *   running ──throws/times out, retries remain──▶ running (after backoff)
 *   running ──throws/times out, none remain──▶ failed
 *   running ──unmet wait──▶ suspended ──waitpoint met──▶ running (replay)
 */
import type { CompleteTokenResult, Logger, RunRecord, StepRecord, TriggerOptions } from '../../types.ts'
import { TaskNotFoundError, errorMessage } from '../errors.ts'
import { validateTaskInput } from '../schema.ts'
import { backoffDelay } from './backoff.ts'
import type { TaskDefinition } from './definitions.ts'
import { newRunId, timerId } from './ids.ts'
import { checkTriggerOptions } from './options.ts'
import { invoke, type InvocationHandle, type InvocationOutcome } from './runner.ts'
import { childRunResult, type StepHost } from './steps.ts'
import { isFinished, type RunStore, type TimerRecord } from './store.ts'
import { createTimerSet, type TimerSet } from './timers.ts'

/** Logged once per runtime, the first time a durable wait runs in-process (spec "States and transitions"). */
export const LOCAL_WAIT_NOTE =
  '[svc] ctx.step waits run in-process here: sleeps, child-task waits and tokens are kept in memory and timers, and do not survive a restart. Durable waits need the managed platform broker.'

interface ActiveEntry {
  handle?: InvocationHandle
  /** The whole dispatch: invocation, transition and any re-dispatch. */
  done: Promise<void>
  /** Dispatch again once this invocation ends. */
  again: boolean
}

interface Waiter {
  resolve(run: RunRecord): void
  reject(error: Error): void
}

export class TaskEngine {
  readonly store: RunStore
  readonly tasks: ReadonlyMap<string, TaskDefinition>
  readonly logger: Logger
  readonly timers: TimerSet
  /** Runs with an invocation in flight, and the promise of its whole dispatch. */
  readonly active = new Map<string, ActiveEntry>()
  readonly stepHost: StepHost
  closed = false
  #waiters = new Map<string, Waiter[]>()
  #noted = false

  constructor(options: { store: RunStore; tasks: ReadonlyMap<string, TaskDefinition>; logger: Logger; unrefTimers: boolean }) {
    this.store = options.store
    this.tasks = options.tasks
    this.logger = options.logger
    this.timers = createTimerSet({ unref: options.unrefTimers })
    this.stepHost = {
      store: this.store,
      trigger: (name, payload, opts) => this.trigger(name, payload, opts),
      noteLocalWait: () => {
        if (this.#noted) return
        this.#noted = true
        this.logger.info(LOCAL_WAIT_NOTE)
      },
    }
  }

  /** Validates and records a run; starts it unless it is delayed. Never waits for it to finish. */
  async trigger(name: string, payload?: unknown, opts?: TriggerOptions): Promise<RunRecord> {
    if (this.closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
    const def = this.tasks.get(name)
    if (!def) throw new TaskNotFoundError(String(name), [...this.tasks.keys()])
    const { delaySeconds, idempotencyKey, trigger, parentRunId } = checkTriggerOptions(opts, `trigger("${name}")`)
    // Spec "Task schedule": scheduled runs skip validation and get { _cron: true }.
    const input = trigger === 'cron' ? { _cron: true } : await validateTaskInput(def.input, payload)
    const now = new Date()
    const iso = now.toISOString()
    const delayed = delaySeconds > 0
    const run: RunRecord = {
      id: newRunId(),
      taskName: name,
      status: delayed ? 'scheduled' : 'running',
      trigger,
      input,
      ok: true,
      attempts: [],
      steps: {},
      createdAt: iso,
    }
    if (delayed) run.runAt = new Date(now.getTime() + delaySeconds * 1000).toISOString()
    else run.startedAt = iso
    if (idempotencyKey !== undefined) run.idempotencyKey = idempotencyKey
    if (parentRunId !== undefined) run.parentRunId = parentRunId
    const stored = await this.store.createRun(run)
    // Another run holds the idempotency key: that run is the answer.
    if (stored.id !== run.id) return stored
    if (delayed) await this.armTimer({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt! })
    else this.dispatch(stored)
    return run
  }

  /**
   * Starts an invocation of a running run. If one is in flight already (a
   * waitpoint met while the run was still suspending, say), the run is
   * dispatched again as soon as that one ends.
   */
  dispatch(run: RunRecord): void {
    if (this.closed) return
    const current = this.active.get(run.id)
    if (current) {
      current.again = true
      return
    }
    const entry: ActiveEntry = { done: undefined!, again: false }
    this.active.set(run.id, entry)
    entry.done = this.#execute(run, entry)
      .catch((error) => this.logger.error(`[svc] task "${run.taskName}": run ${run.id} could not be processed: ${errorMessage(error)}`))
      .then(async () => {
        this.active.delete(run.id)
        if (!entry.again) return
        const latest = await this.store.getRun(run.id)
        if (latest?.status === 'running') this.dispatch(latest)
      })
  }

  async #execute(run: RunRecord, entry: ActiveEntry): Promise<void> {
    const def = this.tasks.get(run.taskName)
    if (!def) {
      await this.#finish(run.id, { status: 'failed', ok: false }, `Task "${run.taskName}" is not registered in this runtime`)
      return
    }
    entry.handle = invoke(def, run, this.stepHost)
    const outcome = await entry.handle.outcome
    if (outcome.kind === 'suspended') return this.#suspend(run, outcome)
    // An attempt cut short by close() is not the task's failure: record
    // nothing, so the run stays `running` and a durable store's recover()
    // runs it again.
    if (outcome.kind === 'failed' && this.closed) return
    await this.store.appendAttempt(run.id, outcome.attempt)
    if (outcome.kind === 'completed') {
      await this.#finish(run.id, { status: 'completed', ok: true, result: outcome.result })
      return
    }
    const index = outcome.attempt.index
    // After close() the retry timer is still recorded (armTimer saves it and
    // skips the in-process timer), so a durable store can pick it up.
    if (index <= def.retries) {
      const delay = backoffDelay(index)
      this.logger.warn(
        `[svc] task "${def.name}": attempt ${index} of ${def.retries + 1} failed (run ${run.id}): ${outcome.error}; retrying in ${delay} ms`,
      )
      const dueAt = new Date(Date.now() + delay).toISOString()
      await this.armTimer({ id: timerId(run.id, 'retry'), runId: run.id, kind: 'retry', dueAt })
      return
    }
    await this.#finish(run.id, { status: 'failed', ok: false }, outcome.error, index)
  }

  async #finish(
    runId: string,
    patch: { status: 'completed' | 'failed'; ok: boolean; result?: unknown },
    error?: string,
    attempts?: number,
  ): Promise<void> {
    const done = await this.store.updateRun(
      runId,
      { ...patch, finishedAt: new Date().toISOString(), suspended: undefined },
      { status: 'running' },
    )
    if (!done) return
    if (patch.status === 'failed') {
      // Spec "Errors" and the style guide: a background failure is never
      // silent; it is logged with the task it came from.
      const after = attempts === undefined ? '' : ` after ${attempts} attempt${attempts === 1 ? '' : 's'}`
      const cron = done.trigger === 'cron' ? 'scheduled ' : ''
      this.logger.error(`[svc] ${cron}task "${done.taskName}" failed${after} (run ${runId}): ${error}`)
    }
    this.#settled(done)
  }

  async #suspend(run: RunRecord, outcome: Extract<InvocationOutcome, { kind: 'suspended' }>): Promise<void> {
    const { stepKey, waitpoint } = outcome.signal
    if (outcome.swallowed) {
      this.logger.warn(
        `[svc] task "${run.taskName}": the handler caught the suspension of step "${stepKey}" instead of letting it unwind; the run is suspended anyway. Rethrow it from catch blocks: if (isSuspension(error)) throw error`,
      )
    }
    const saved = await this.store.updateRun(run.id, { status: 'suspended', suspended: { stepKey, waitpoint } }, { status: 'running' })
    if (saved) await this.armWaitpoint(saved)
  }

  /**
   * Arranges for a suspended run's waitpoint to resume it, and resumes it at
   * once if the waitpoint was met while the run was suspending.
   */
  async armWaitpoint(run: RunRecord): Promise<void> {
    if (run.status !== 'suspended' || !run.suspended) return
    const { stepKey, waitpoint } = run.suspended
    if (waitpoint.type === 'sleep') {
      await this.armTimer({ id: timerId(run.id, 'sleep', stepKey), runId: run.id, kind: 'sleep', stepKey, dueAt: waitpoint.until })
    } else if (waitpoint.type === 'token') {
      if (waitpoint.timeoutAt !== undefined) {
        await this.armTimer({
          id: timerId(run.id, 'token-timeout', stepKey),
          runId: run.id,
          kind: 'token-timeout',
          stepKey,
          tokenId: waitpoint.tokenId,
          dueAt: waitpoint.timeoutAt,
        })
      }
      const token = await this.store.getToken(waitpoint.tokenId)
      if (token && token.status !== 'waiting') await this.resume(run.id, stepKey, tokenStep(token.status, token.payload))
    } else {
      const child = await this.store.getRun(waitpoint.runId)
      if (child && isFinished(child.status)) {
        await this.resume(run.id, stepKey, { status: 'completed', output: childRunResult(child) })
      }
    }
  }

  /**
   * Records the step a waitpoint was waiting on and re-dispatches the run,
   * which replays its handler from the first line. A no-op when the run is
   * no longer suspended at that step.
   */
  async resume(runId: string, stepKey: string, step: StepRecord): Promise<boolean> {
    const run = await this.store.getRun(runId)
    if (!run || run.status !== 'suspended' || run.suspended?.stepKey !== stepKey) return false
    await this.store.saveStep(runId, stepKey, step)
    const resumed = await this.store.updateRun(runId, { status: 'running', suspended: undefined }, { status: 'suspended' })
    if (!resumed) return false
    this.dispatch(resumed)
    return true
  }

  async armTimer(timer: TimerRecord): Promise<void> {
    await this.store.saveTimer(timer)
    this.#schedule(timer)
  }

  #schedule(timer: TimerRecord): void {
    if (this.closed) return
    this.timers.set(timer.id, Date.parse(timer.dueAt), () => {
      this.#fire(timer.id).catch((error) =>
        this.logger.error(`[svc] task runtime: timer ${timer.id} failed: ${errorMessage(error)}`),
      )
    })
  }

  async #fire(id: string): Promise<void> {
    if (this.closed) return
    // Taking the timer is the claim: whoever removes it acts on it.
    const timer = await this.store.takeTimer(id)
    if (!timer) return
    switch (timer.kind) {
      case 'delay': {
        const now = new Date().toISOString()
        const run = await this.store.updateRun(timer.runId, { status: 'running', startedAt: now }, { status: 'scheduled' })
        if (run) this.dispatch(run)
        return
      }
      case 'retry': {
        const run = await this.store.getRun(timer.runId)
        if (run?.status === 'running') this.dispatch(run)
        return
      }
      case 'sleep':
        await this.resume(timer.runId, timer.stepKey!, { status: 'completed' })
        return
      case 'token-timeout': {
        const settled = await this.store.settleToken(timer.tokenId!, 'timed_out')
        if (settled?.settled) await this.resume(timer.runId, timer.stepKey!, { status: 'timed_out' })
      }
    }
  }

  async completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
    if (typeof tokenId !== 'string' || tokenId === '') {
      throw new TypeError(`completeToken(tokenId): tokenId must be a non-empty string (got ${typeof tokenId})`)
    }
    const result = await this.store.settleToken(tokenId, 'completed', payload)
    if (!result) return 'not_found'
    const { settled, token } = result
    if (!settled) return token.status === 'timed_out' ? 'timed_out' : 'already_completed'
    const timeout = timerId(token.runId, 'token-timeout', token.stepKey)
    this.timers.clear(timeout)
    await this.store.takeTimer(timeout)
    await this.resume(token.runId, token.stepKey, tokenStep('completed', payload))
    return 'completed'
  }

  /** Resolves once the run is completed or failed. */
  waitForRun(id: string): Promise<RunRecord> {
    return new Promise((resolve, reject) => {
      // Register first, then look: a run that finishes in between is caught
      // by one of the two.
      const waiter: Waiter = { resolve, reject }
      const list = this.#waiters.get(id)
      if (list) list.push(waiter)
      else this.#waiters.set(id, [waiter])
      this.store.getRun(id).then((run) => {
        if (!run) {
          this.#dropWaiter(id, waiter)
          reject(new Error(`Unknown run "${id}"; it never existed or was evicted from the run store`))
        } else if (isFinished(run.status)) {
          this.#dropWaiter(id, waiter)
          resolve(run)
        } else if (this.closed) {
          this.#dropWaiter(id, waiter)
          reject(new Error(`Run ${id} cannot finish: the task runtime is closed`))
        }
      }, reject)
    })
  }

  /**
   * Picks up what the store holds after a restart (durable stores): re-arms
   * pending timers, re-dispatches running runs that have no retry pending
   * (at-least-once: an attempt that was in flight runs again), and re-arms
   * the waitpoints of suspended runs, resuming those already met.
   */
  async recover(): Promise<void> {
    const timers = await this.store.listTimers()
    const retrying = new Set<string>()
    for (const timer of timers) {
      if (timer.kind === 'retry') retrying.add(timer.runId)
      this.#schedule(timer)
    }
    for (const run of await this.store.listRuns({ status: 'running' })) {
      if (!retrying.has(run.id)) this.dispatch(run)
    }
    for (const run of await this.store.listRuns({ status: 'suspended' })) await this.armWaitpoint(run)
  }

  /** Stops timers and in-flight attempts, and rejects pending `waitForRun` calls. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.timers.clearAll()
    for (const entry of this.active.values()) entry.handle?.abort('The task runtime closed during this attempt')
    const error = new Error('The task runtime closed before the run finished')
    for (const list of this.#waiters.values()) for (const waiter of list) waiter.reject(error)
    this.#waiters.clear()
  }

  /** A run reached `completed` or `failed`: wake its waiters and a suspended parent. */
  #settled(run: RunRecord): void {
    const list = this.#waiters.get(run.id)
    if (list) {
      this.#waiters.delete(run.id)
      for (const waiter of list) waiter.resolve(run)
    }
    if (run.parentRunId !== undefined) {
      this.#resumeParent(run).catch((error) =>
        this.logger.error(`[svc] task "${run.taskName}": could not resume parent run ${run.parentRunId}: ${errorMessage(error)}`),
      )
    }
  }

  async #resumeParent(child: RunRecord): Promise<void> {
    const parent = await this.store.getRun(child.parentRunId!)
    const wait = parent?.suspended
    if (!parent || !wait || wait.waitpoint.type !== 'task' || wait.waitpoint.runId !== child.id) return
    await this.resume(parent.id, wait.stepKey, { status: 'completed', output: childRunResult(child) })
  }

  #dropWaiter(id: string, waiter: Waiter): void {
    const list = this.#waiters.get(id)
    if (!list) return
    const i = list.indexOf(waiter)
    if (i >= 0) list.splice(i, 1)
    if (list.length === 0) this.#waiters.delete(id)
  }
}

function tokenStep(status: 'completed' | 'timed_out', payload: unknown): StepRecord {
  if (status === 'timed_out') return { status: 'timed_out' }
  return payload === undefined ? { status: 'completed' } : { status: 'completed', output: payload }
}
