/**
 * The run state machine. Every transition
 * goes through the store with a compare-and-set on the run's status, so a
 * run is never dispatched twice for the same reason, and the same code path
 * serves in-process waits today and a durable store later.
 *
 *   (none) ──trigger──▶ running | queued | scheduled ──delay──▶ running | queued
 *   queued ──a slot frees (flow.ts)──▶ running
 *   running ──returns──▶ completed
 *   running ──throws/times out, retries remain──▶ running (after backoff)
 *   running ──throws/times out, none remain──▶ failed
 *   running ──unmet wait──▶ suspended ──waitpoint met──▶ running | queued (replay)
 *   scheduled | queued | running | suspended ──cancel──▶ cancelled
 *
 * A task with `concurrency` or `rateLimit` starts its runs `queued`; the
 * store's `startQueued` moves those its limits allow to `running`, and the
 * engine asks again whenever a run of the task stops holding a slot
 * (finished, suspended, cancelled) or a rate window frees a place.
 *
 * The engine is the one owner of this state: runs in flight, timers (through
 * the `Waits` it creates), waiters and the cron overlap guard are private,
 * and the parts it creates get callbacks, never the engine.
 *
 * On a store that several processes share (`store.shared`), the engine
 * also claims its work there: an attempt starts only under a lease on its
 * run, which it renews while the attempt runs and gives up when it ends;
 * due timers and attempts whose process died are swept up (`Sweeper`) by
 * whichever live process claims them first; and each cron tick is claimed
 * before it starts a run. An attempt loses its lease when a renewal finds
 * it gone, or, on a store that fences the runs it holds (`store.fences`,
 * shared or a SQLite file several processes open), when one of its writes
 * rejects with `LeaseLostError`: either way it is aborted, logged once,
 * and records nothing more.
 */
import type { Attempt, CompleteTokenResult, Logger, RunChange, RunRecord, TriggerOptions } from '../types.ts'
import { describe } from '../describe.ts'
import { isoAt, isoNow } from './clock.ts'
import { LeaseLostError, RunCancelledError, RunFinishedError, RunNotFoundError, TaskNotFoundError, errorMessage } from '../errors.ts'
import { validateTaskInput } from '../schema.ts'
import { backoffDelay } from './backoff.ts'
import type { TaskDefinition } from './definitions.ts'
import { RunChanges } from './events.ts'
import { newRunId, timerId } from './ids.ts'
import { checkTriggerOptions } from './options.ts'
import { assertPayload, DEFAULT_MAX_PAYLOAD_BYTES } from './payload-limit.ts'
import { limitsStarts } from './flow.ts'
import { Deadlines } from './deadlines.ts'
import { InFlight } from './in-flight.ts'
import { invoke, type InvocationOutcome, type Invoker } from './runner.ts'
import type { StepHost } from './steps.ts'
import { isFinished, LIVE_STATUSES, type RunStore, type SharedWork } from './store.ts'
import { Sweeper } from './sweeper.ts'
import { RunWaiters } from './waiters.ts'
import { Waits } from './waits.ts'

/** The input of a scheduled run, which skips validation (a new object each time: a handler may change its input). */
function cronInput(): { _cron: true } {
  return { _cron: true }
}

function isCronInput(input: unknown): boolean {
  return typeof input === 'object' && input !== null && Object.keys(input).length === 1 && (input as { _cron?: unknown })._cron === true
}

/**
 * `store` as the steps of attempts reach it on a fencing store: a write that
 * finds the attempt's lease lost (`LeaseLostError`) tells `lost` before the
 * handler sees the error, so the attempt is aborted at once, and a handler
 * that catches the error runs no further step.
 */
function noticingLostLeases(store: RunStore, lost: (error: unknown) => never): RunStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args)
        return result instanceof Promise ? result.catch(lost) : result
      }
    },
  })
}

/** The expectation of every transition out of `running`. */
const RUNNING = Object.freeze({ status: 'running' as const })

/** How many timers or orphaned attempts one sweep claims per query. */
const SWEEP_BATCH = 100

/**
 * Logged once per runtime, the first time a wait suspends a run on a store
 * that is not durable (docs/tasks.md "Waits and suspension").
 */
export const LOCAL_WAIT_NOTE =
  '[svc] ctx.step waits run in-process here: sleeps, child-task waits and tokens are kept in memory and timers, and do not survive a restart. ' +
  "For durable waits, pass a durable run store, such as SqliteRunStore from 'svc/node'."

export class TaskEngine {
  readonly #store: RunStore
  readonly #tasks: ReadonlyMap<string, TaskDefinition>
  readonly #logger: Logger
  /** Runs with an invocation in flight. */
  readonly #active = new Map<string, InFlight>()
  readonly #stepHost: StepHost
  /** What every attempt started here shares, its timeouts among them. */
  readonly #invoker: Invoker<InFlight>
  readonly #deadlines = new Deadlines()
  readonly #waits: Waits
  readonly #waiters: RunWaiters
  readonly #changes: RunChanges
  #closed = false
  /** The next look at running runs other processes held (`#claimRunning`). */
  #recheck: ReturnType<typeof setTimeout> | undefined
  /** Draining (on its way out): takes no more work from a shared store. */
  #draining = false
  #noted = false
  /** Last scheduled run per task, for the overlap guard of `fireScheduled`. */
  readonly #lastScheduled = new Map<string, string>()
  /** Tasks whose tick is being checked right now (the guard itself awaits the store). */
  readonly #firing = new Set<string>()
  /** On a shared store: how processes split the work, this engine's id there, and its sweeps. */
  readonly #shared: SharedWork | undefined
  readonly #owner = newRunId()
  readonly #sweeper: Sweeper | undefined
  /** Whether some task has `concurrency` or `rateLimit`. */
  readonly #limited: boolean
  /** The largest input, result, step output and token payload, in bytes of UTF-8 JSON. */
  readonly #maxPayloadBytes: number

  constructor(options: {
    store: RunStore
    tasks: ReadonlyMap<string, TaskDefinition>
    logger: Logger
    unrefTimers: boolean
    /** @default DEFAULT_MAX_PAYLOAD_BYTES */
    maxPayloadBytes?: number
  }) {
    this.#store = options.store
    const maxPayloadBytes = (this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES)
    this.#tasks = options.tasks
    this.#logger = options.logger
    this.#changes = new RunChanges(options.logger)
    this.#waiters = new RunWaiters(options.store)
    this.#waits = new Waits({
      store: this.#store,
      logger: this.#logger,
      unrefTimers: options.unrefTimers,
      maxPayloadBytes,
      dispatch: (run) => {
        this.#changes.emit(run)
        if (run.status === 'queued') this.#promoteLater(run.taskName)
        else this.#start(run)
      },
      startStatus: (taskName) => this.#startStatus(taskName),
      promote: async (runId) => {
        const run = await this.#store.getRun(runId)
        if (run) await this.#promote(run.taskName)
      },
      owner: this.#owner,
    })
    this.#limited = [...this.#tasks.values()].some((def) => limitsStarts(def.flow))
    this.#shared = this.#store.shared
    if (this.#shared) {
      this.#sweeper = new Sweeper({
        shared: this.#shared,
        logger: this.#logger,
        unref: options.unrefTimers,
        sweep: () => this.#sweep(),
        renew: () => this.#renew(),
      })
    }
    // On a fencing store, a write of an attempt whose run another process
    // took over (its own steps, or a child it starts) aborts the attempt.
    const lost = (error: unknown): never => {
      if (error instanceof LeaseLostError) this.#loseLease(error.runId)
      throw error
    }
    const fenced = this.#store.fences === true
    this.#stepHost = {
      store: fenced ? noticingLostLeases(this.#store, lost) : this.#store,
      trigger: fenced
        ? (name, payload, opts) => this.trigger(name, payload, opts).catch(lost)
        : (name, payload, opts) => this.trigger(name, payload, opts),
      logger: this.#logger,
      maxPayloadBytes,
      noteLocalWait: () => {
        if (this.#noted || this.#store.durable) return
        this.#noted = true
        this.#logger.info(LOCAL_WAIT_NOTE)
      },
    }
    this.#invoker = {
      host: this.#stepHost,
      deadlines: this.#deadlines,
      ended: (entry, outcome) => this.#ended(entry, outcome),
    }
  }

  /**
   * Validates and records a run; starts it unless it is delayed. Never waits
   * for it to finish. Every misuse rejects rather than throws.
   */
  trigger(name: string, payload?: unknown, opts?: TriggerOptions): Promise<RunRecord> {
    try {
      if (this.#closed) throw new Error(`Cannot start task "${name}": the task runtime is closed`)
      const def = this.#tasks.get(name)
      if (!def) throw new TaskNotFoundError(String(name), [...this.#tasks.keys()])
      const options = checkTriggerOptions(opts, 'trigger', name)
      // Scheduled runs skip validation and get { _cron: true }; a task
      // without a schema takes its payload as it is, without waiting a turn.
      if (options.trigger === 'cron') return this.#create(def, cronInput(), options)
      if (def.input === undefined || def.input === null) return this.#create(def, payload, options)
      return validateTaskInput(def.input, payload).then((input) => this.#create(def, input, options))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Starts a new run of run `id`'s task with its input, `trigger: 'replay'`
   * and `replayOf: id`. The input is validated again, against the task's
   * schema of today; the input of a scheduled run stays `{ _cron: true }`.
   */
  async replay(id: string): Promise<RunRecord> {
    if (this.#closed) throw new Error(`Cannot replay run "${id}": the task runtime is closed`)
    const source = await this.#store.getRun(id)
    if (!source) throw new RunNotFoundError(id)
    const def = this.#tasks.get(source.taskName)
    if (!def) throw new TaskNotFoundError(source.taskName, [...this.#tasks.keys()])
    const input = isCronInput(source.input) ? cronInput() : await validateTaskInput(def.input, source.input)
    return this.#create(def, input, { delaySeconds: 0, trigger: 'replay', replayOf: id })
  }

  /**
   * Moves a live run to `cancelled` (a compare-and-set from any live
   * status), then aborts its attempt in flight here, removes its timers,
   * and answers whoever waits for it, as a finished run does.
   */
  async cancel(id: string): Promise<RunRecord> {
    const run = await this.#store.updateRun(
      id,
      { status: 'cancelled', ok: false, finishedAt: isoNow(), suspended: undefined },
      { status: LIVE_STATUSES },
    )
    if (!run) {
      const current = await this.#store.getRun(id)
      if (!current) throw new RunNotFoundError(id)
      throw new RunFinishedError(id, current.status)
    }
    const entry = this.#active.get(id)
    if (entry) {
      // The handler may ignore its signal and carry on: from here on its
      // steps throw, and the engine records nothing of this attempt.
      entry.stopped = true
      entry.handle?.abort(new RunCancelledError(id, `Run "${id}" of task "${run.taskName}" was cancelled`), 'was cancelled')
    }
    await this.#waits.dropRun(id)
    // Another process may run the attempt: woken, it renews its leases at
    // once, finds this one gone, and aborts the attempt there.
    await this.#shared?.wake()
    this.#changes.emit(run)
    this.#waiters.settle(run)
    this.#waits.finished(run)
    // A slot it held is free; a rate-limit timer it carried is gone, so look again.
    this.#promoteLater(run.taskName)
    return run
  }

  /** See `TaskRuntime.onRunChange`. */
  onRunChange(listener: (change: RunChange) => void, onEnd?: () => void): () => void {
    return this.#changes.subscribe(listener, onEnd)
  }

  /**
   * Records a run of `def` with an input already validated; starts it unless
   * it is delayed. Not async, for the same reason as `#finish`: every run
   * being recorded would hold its frame.
   */
  #create(
    def: TaskDefinition,
    input: unknown,
    options: Omit<TriggerOptions, 'delaySeconds'> & { delaySeconds: number; replayOf?: string },
  ): Promise<RunRecord> {
    const { name } = def
    const { delaySeconds, idempotencyKey, trigger = 'manual', parentRunId, replayOf } = options
    assertPayload(
      input,
      this.#maxPayloadBytes,
      `trigger("${name}"): the payload cannot be stored as JSON`,
      `The input of task "${name}" is`,
    )
    const now = Date.now()
    const iso = isoAt(now)
    // A cron tick or a replay is a deliberate single run: it joins no other.
    const debounce = trigger === 'cron' || trigger === 'replay' ? undefined : def.flow.debounce
    const delay = debounce ? Math.max(delaySeconds, debounce.seconds) : delaySeconds
    const delayed = delay > 0
    const status = delayed ? 'scheduled' : this.#startStatus(name)
    // `startedAt` goes on after the literal, not in it: the memory store's
    // copy of the record then takes the fields a run's end adds with less
    // room (about 8 bytes less per retained run, measured with bench:tasks).
    const run: RunRecord = { id: newRunId(), taskName: name, status, trigger, input, ok: true, attempts: [], steps: {}, createdAt: iso }
    if (delayed) run.runAt = isoAt(now + delay * 1000)
    else if (status === 'running') run.startedAt = iso
    if (idempotencyKey !== undefined) run.idempotencyKey = idempotencyKey
    if (parentRunId !== undefined) run.parentRunId = parentRunId
    if (replayOf !== undefined) run.replayOf = replayOf
    if (debounce) return this.#store.debounceRun(run, debounce.key).then((stored) => this.#created(run, stored, true))
    // A bound method rather than a closure: it takes less, and every run
    // being recorded holds it until the store answers.
    return this.#store.createRun(run).then(this.#created.bind(this, run))
  }

  /**
   * Starts, queues or arms the run just recorded. `stored` is another run
   * when that one holds the idempotency key, or when a debounced trigger
   * joined a scheduled run of its key.
   */
  #created(run: RunRecord, stored: RunRecord, debounced = false): RunRecord | Promise<RunRecord> {
    if (stored.id !== run.id) {
      // A debounced trigger joined a scheduled run: it starts later, with this input.
      if (debounced && stored.status === 'scheduled' && stored.runAt === run.runAt) {
        this.#changes.emit(stored)
        return this.#waits
          .arm({ id: timerId(stored.id, 'delay'), runId: stored.id, kind: 'delay', dueAt: stored.runAt! })
          .then(() => stored)
      }
      // Otherwise another run holds the idempotency key: that run is the answer.
      return stored
    }
    this.#changes.emit(stored)
    if (run.status === 'running') {
      this.#start(stored)
      return run
    }
    if (run.status === 'queued') return this.#promote(run.taskName).then(() => run)
    return this.#waits.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt! }).then(() => run)
  }

  /**
   * One tick of a task's schedule (the scheduler's `fire` callback). Skips,
   * with a warning, while the previous scheduled run of the task has not
   * finished (suspended counts as not finished); manual triggers never pass
   * through here, so they bypass the guard. Never rejects: a failure is
   * logged with the task name. `tick` is the instant the tick stands for.
   * On a shared store the tick is claimed first, keyed on its minute (the
   * resolution of a five-field schedule), so of the processes that fire it
   * one starts a run; the guard then looks at every process's runs.
   */
  async fireScheduled(name: string, tick: Date): Promise<RunRecord | undefined> {
    if (this.#firing.has(name)) {
      this.#logger.warn(`[svc] scheduled task "${name}": skipped a tick; the previous tick is still starting`)
      return undefined
    }
    this.#firing.add(name)
    try {
      if (this.#shared) {
        const minute = new Date(Math.floor(tick.getTime() / 60_000) * 60_000).toISOString()
        if (!(await this.#shared.claimTick(name, minute))) return undefined
      }
      const last = await this.#lastScheduledRun(name)
      if (last && !isFinished(last.status)) {
        this.#logger.warn(`[svc] scheduled task "${name}": skipped a tick; the previous scheduled run ${last.id} is still ${last.status}`)
        return undefined
      }
      const run = await this.trigger(name, undefined, { trigger: 'cron' })
      this.#lastScheduled.set(name, run.id)
      return run
    } catch (error) {
      this.#logger.error(`[svc] scheduled task "${name}" could not start: ${errorMessage(error)}`)
      return undefined
    } finally {
      this.#firing.delete(name)
    }
  }

  /** The newest scheduled run of the task this engine knows of; on a shared store, one still live from any process. */
  async #lastScheduledRun(name: string): Promise<RunRecord | undefined> {
    if (this.#shared) {
      const live = await this.#store.listRuns({ taskName: name, status: LIVE_STATUSES })
      return live.find((run) => run.trigger === 'cron')
    }
    const lastId = this.#lastScheduled.get(name)
    return lastId === undefined ? undefined : this.#store.getRun(lastId)
  }

  /** Resolves once the run is completed, failed or cancelled. */
  waitForRun(id: string): Promise<RunRecord> {
    // While its attempt runs here, the run is live and its end is settled
    // here: whatever that attempt ends with, or a cancel, which stops it.
    // So is it while the attempt's end is being written, which a store read
    // could see before the write has committed (SQLite's batch): a waiter
    // answered from that read would learn of an end a crash can still undo.
    // On a shared store an entry waiting for its lease may be another
    // process's run, so only its running attempt counts there.
    const entry = this.#active.get(id)
    const live = entry !== undefined && !entry.stopped && !entry.ended && (entry.handle !== undefined || !this.#shared)
    return this.#waiters.wait(id, live)
  }

  completeToken(tokenId: string, payload?: unknown): Promise<CompleteTokenResult> {
    return this.#waits.completeToken(tokenId, payload)
  }

  /**
   * Picks up what the store holds after a restart (durable stores): re-arms
   * pending timers, re-arms the delay of scheduled runs that lost theirs,
   * re-dispatches running runs that have no retry pending (at-least-once: an
   * attempt that was in flight runs again), and re-arms the waitpoints of
   * suspended runs, resuming those already met.
   */
  async recover(): Promise<void> {
    if (this.#sweeper) return this.#recoverShared()
    const retrying = new Set<string>()
    const delayed = new Set<string>()
    for (const timer of await this.#waits.rearm()) {
      if (timer.kind === 'retry') retrying.add(timer.runId)
      if (timer.kind === 'delay') delayed.add(timer.runId)
    }
    // A process that took a delay timer and died before the run went
    // `running` leaves a scheduled run with no timer; nothing else starts it.
    for (const run of await this.#store.listRuns({ status: 'scheduled' })) {
      if (delayed.has(run.id)) continue
      await this.#waits.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt ?? run.createdAt })
    }
    const running = (await this.#store.listRuns({ status: 'running' })).filter((run) => !retrying.has(run.id))
    if (this.#store.claimRunning) await this.#claimRunning(running)
    else for (const run of running) this.#start(run)
    for (const run of await this.#store.listRuns({ status: 'suspended' })) await this.#waits.armWaitpoint(run)
    await this.#promoteQueued()
  }

  /**
   * Starts the running runs no live process holds (`RunStore.claimRunning`):
   * on a file other live processes share, the attempts they have in flight
   * are theirs. The others are asked about again when the store says their
   * holder may have gone (its heartbeat lapsing), until none is left
   * running: a holder that is a process restarted in another PID namespace
   * (a container) can only be told gone that way.
   */
  async #claimRunning(running: RunRecord[]): Promise<void> {
    const { claimed, recheckInMs } = await this.#store.claimRunning!(running.map((run) => run.id))
    const ours = new Set(claimed)
    for (const run of running) if (ours.has(run.id)) this.#start(run)
    const left = running.filter((run) => !ours.has(run.id)).map((run) => run.id)
    if (recheckInMs === undefined || left.length === 0 || this.#closed) return
    clearTimeout(this.#recheck)
    // Unref'd: runs other processes hold never keep this one alive.
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined
      this.#claimAgain(left).catch((error: unknown) =>
        this.#logger.error(`[svc] task runtime: could not look again at runs other processes held: ${errorMessage(error)}`),
      )
    }, recheckInMs)
    this.#recheck.unref?.()
  }

  async #claimAgain(ids: string[]): Promise<void> {
    if (this.#closed) return
    const runs = await Promise.all(ids.map((id) => this.#store.getRun(id)))
    const running = runs.filter((run): run is RunRecord => run?.status === 'running')
    if (running.length > 0) await this.#claimRunning(running)
  }

  /**
   * On a shared store, the sweeps find due timers and orphaned attempts, so
   * recovering is starting them, plus what no timer stands for: suspended
   * runs whose token or child finished while no process was there to
   * resume them, and scheduled runs that lost their delay timer.
   */
  async #recoverShared(): Promise<void> {
    if (this.#closed || this.#sweeper!.started) return
    const delayed = new Set<string>()
    for (const timer of await this.#store.listTimers()) if (timer.kind === 'delay') delayed.add(timer.runId)
    for (const run of await this.#store.listRuns({ status: 'scheduled' })) {
      if (delayed.has(run.id)) continue
      await this.#waits.arm({ id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt ?? run.createdAt })
    }
    for (const run of await this.#store.listRuns({ status: 'suspended' })) {
      if (run.suspended?.waitpoint.type !== 'sleep') await this.#waits.armWaitpoint(run)
    }
    await this.#promoteQueued()
    await this.#sweeper!.start()
  }

  /**
   * One sweep on a shared store: acts on the due timers it claims, takes
   * over the attempts nobody holds a lease on, and answers `waitForRun`
   * callers whose run finished in another process. Resolves to when the
   * next timer is due.
   */
  async #sweep(): Promise<number | undefined> {
    const shared = this.#shared!
    for (;;) {
      if (this.#closed || this.#draining) return undefined
      const timers = await shared.claimDueTimers(this.#owner, new Date().toISOString(), SWEEP_BATCH)
      await Promise.all(
        timers.map((timer) =>
          this.#waits
            .fireClaimed(timer)
            .catch((error) =>
              this.#logger.error(`[svc] task runtime: timer ${timer.id} of run ${timer.runId} failed: ${errorMessage(error)}`),
            ),
        ),
      )
      if (timers.length < SWEEP_BATCH || this.#closed || this.#draining) break
    }
    if (this.#closed || this.#draining) return undefined
    const orphans = await shared.claimOrphanedRuns(this.#owner, SWEEP_BATCH)
    if (this.#closed || this.#draining) {
      // Claimed by a sweep that was under way when the engine began to drain: they go back.
      if (orphans.length > 0) {
        await shared.releaseLeases(
          this.#owner,
          orphans.map((run) => run.id),
        )
        await shared.wake()
      }
      return undefined
    }
    for (const run of orphans) {
      if (run.status === 'running') {
        this.#start(run, true)
        continue
      }
      await this.#armOrphan(run).catch((error: unknown) =>
        this.#logger.error(`[svc] task "${run.taskName}": could not arm the wait of suspended run ${run.id}: ${errorMessage(error)}`),
      )
    }
    await this.#waiters.refresh()
    // A process that died between queuing a run and asking for its slot
    // left it for whichever process looks next.
    await this.#promoteQueued()
    const next = await shared.nextDueAt()
    return next === undefined ? undefined : Date.parse(next)
  }

  /**
   * Arms the wait of a suspended run claimed as an orphan (its process died
   * between suspending it and arming the wait), then gives the claim up,
   * whatever happened: a claim kept would keep this process from taking
   * the run again.
   */
  async #armOrphan(run: RunRecord): Promise<void> {
    const shared = this.#shared!
    // A met wait for a child resumes the run at once, and the attempt
    // takes its own lease: this claim goes first, or it would end that one.
    const met = run.suspended?.waitpoint.type === 'task'
    if (met) await shared.releaseLeases(this.#owner, [run.id])
    try {
      await this.#waits.armWaitpoint(run)
    } finally {
      // Unless arming resumed the run and dispatched it here: that attempt
      // took the lease for itself, and gives it up when it ends.
      if (!met && !this.#active.has(run.id)) await shared.releaseLeases(this.#owner, [run.id])
    }
  }

  /**
   * Renews the leases of the attempts in flight here. An attempt whose lease
   * was lost is aborted (`#loseLease`).
   */
  async #renew(): Promise<void> {
    const ids = [...this.#active.entries()].filter(([, entry]) => entry.leased && !entry.stopped).map(([id]) => id)
    if (ids.length === 0) return
    const held = new Set(await this.#shared!.renewLeases(this.#owner, ids))
    for (const id of ids) if (!held.has(id)) this.#loseLease(id)
  }

  /**
   * The attempt of run `runId` here lost its lease: a renewal, or one of
   * its writes (`LeaseLostError`), found that this process stalled past
   * `leaseMs` and another took the run over, or that the run was
   * cancelled. Logged once; the attempt is aborted and records nothing:
   * the run is another process's now, or over.
   */
  #loseLease(runId: string): void {
    const entry = this.#active.get(runId)
    if (!entry || entry.stopped) return
    this.#logger.warn(
      `[svc] task runtime: lost the lease on run ${runId} (this process stalled long enough for another to take the run over, or the run was cancelled); its attempt here is aborted and records nothing`,
    )
    entry.stopped = true
    entry.handle?.abort(
      `The lease on run ${runId} was lost (the run was cancelled, or this process stalled long enough for another to take it over)`,
      'lost its lease',
    )
  }

  /**
   * Waits for in-flight attempts, at most `timeoutMs`. Attempts may start
   * more work (a retry, a resumed parent) while it waits, so it looks again
   * until nothing is in flight or time is up. On a shared store the engine
   * takes no more work from the others from then on.
   */
  async drain(timeoutMs = 30_000): Promise<void> {
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) {
      throw new TypeError(`drain(timeoutMs): timeoutMs must be a number of milliseconds, 0 or more (got ${describe(timeoutMs)})`)
    }
    // A process drains on its way out: on a shared store it stops taking
    // due work and orphaned attempts, which live processes take instead.
    this.#draining = true
    this.#sweeper?.pause()
    // Open event streams would hold the server's drain of requests until its deadline.
    this.#changes.end()
    const deadline = Date.now() + timeoutMs
    while (this.#active.size > 0) {
      const left = deadline - Date.now()
      if (left <= 0) {
        this.#logger.warn(`[svc] task runtime: ${this.#active.size} attempt(s) still in flight after ${timeoutMs} ms of draining`)
        return
      }
      let timer: ReturnType<typeof setTimeout> | undefined
      const expired = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, left)
      })
      await Promise.race([Promise.allSettled([...this.#active.values()].map((entry) => entry.done())), expired])
      clearTimeout(timer)
    }
  }

  /**
   * One tick where no process lives between invocations (a function
   * platform): on a shared store, one sweep (`claim`, the default) takes the
   * due timers and lapsed leases and starts what they stand for; then it
   * waits for the attempts in flight here, and the work they start, until
   * none is left or `untilMs` (epoch ms) passes, renewing their leases
   * meanwhile. Without `claim` it only waits: an invocation that answered a
   * request holds the run it started to its end or first wait. On a store
   * that is not shared, timers are this process's own, so it only waits.
   * Resolves to the number of attempts still in flight.
   */
  async sweep(options: { untilMs: number; claim?: boolean }): Promise<{ inFlight: number }> {
    const { untilMs, claim = true } = options ?? {}
    if (typeof untilMs !== 'number' || Number.isNaN(untilMs)) {
      throw new TypeError(`sweep({ untilMs }): untilMs must be a time in epoch milliseconds (got ${describe(untilMs)})`)
    }
    if (claim && this.#shared && !this.#closed && !this.#draining) await this.#sweep()
    const renewEvery = this.#shared ? Math.max(1, Math.floor(this.#shared.leaseMs / 3)) : Infinity
    while (this.#active.size > 0 && Date.now() < untilMs) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const lapse = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.min(untilMs - Date.now(), renewEvery))
      })
      await Promise.race([Promise.allSettled([...this.#active.values()].map((entry) => entry.done())), lapse])
      clearTimeout(timer)
      if (this.#shared && this.#active.size > 0) await this.#renew()
    }
    return { inFlight: this.#active.size }
  }

  /**
   * Stops timers and in-flight attempts, and rejects pending `waitForRun`
   * calls. On a shared store it also gives up its leases and wakes the other
   * processes, which take its attempts over at once rather than after
   * `leaseMs`; the promise settles once they are told.
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    this.#closed = true
    this.#changes.end()
    this.#waits.close()
    for (const entry of this.#active.values()) entry.handle?.abort('The task runtime closed during this attempt')
    this.#deadlines.clear()
    clearTimeout(this.#recheck)
    this.#waiters.rejectAll(new Error('The task runtime closed before the run finished'))
    if (!this.#sweeper) return Promise.resolve()
    return this.#handOver()
  }

  async #handOver(): Promise<void> {
    const shared = this.#shared!
    try {
      // Stopping (no new sweep from here) happens at once; waiting for the
      // sweep in progress and for UNLISTEN takes round trips the others
      // need not wait for.
      const stopped = this.#sweeper!.stop()
      await shared.releaseLeases(this.#owner)
      await shared.wake()
      if (await stopped) {
        // A sweep in progress may have claimed attempts since; they go back too.
        await shared.releaseLeases(this.#owner)
        await shared.wake()
      }
    } catch (error) {
      this.#logger.error(
        `[svc] task runtime: could not hand this process's attempts over: ${errorMessage(error)}; they run again once their leases lapse`,
      )
    }
  }

  /**
   * Starts an invocation of a running run. If one is in flight already (a
   * waitpoint met while the run was still suspending, say), the run is
   * dispatched again as soon as that one ends. `leased`: this engine already
   * holds the run's lease (it claimed an orphaned attempt).
   */
  #start(run: RunRecord, leased = false): void {
    if (this.#closed) return
    const current = this.#active.get(run.id)
    if (current) {
      current.again = true
      return
    }
    const entry = new InFlight(run, leased)
    this.#active.set(run.id, entry)
    // Another live process may hold the run: then the attempt is theirs.
    if (!this.#shared || leased) {
      this.#attempt(entry, run)
      return
    }
    this.#shared.acquireLease(this.#owner, run.id).then(
      (held) => {
        entry.leased = held
        if (held) this.#attempt(entry, run)
        else this.#over(entry)
      },
      (error: unknown) => this.#failed(entry, error),
    )
  }

  /**
   * Starts the attempt. A dispatch is a chain of callbacks on its entry,
   * not an async method: every run in flight would hold that method's
   * frame, and the promises it awaits.
   */
  #attempt(entry: InFlight, run: RunRecord): void {
    try {
      if (entry.stopped) {
        this.#over(entry)
        return
      }
      const def = this.#tasks.get(run.taskName)
      if (!def) {
        const missing = `Task "${run.taskName}" is not registered in this runtime`
        this.#finish(run.id, { status: 'failed', ok: false }).then(
          (done) => this.#written(entry, done, missing),
          (error: unknown) => this.#failed(entry, error),
        )
        return
      }
      // An invocation that ended at once has been through `#ended` already.
      entry.handle = invoke(def, run, this.#invoker, entry)
    } catch (error) {
      this.#failed(entry, error)
    }
  }

  /** The attempt is over: records how it ended. */
  #ended(entry: InFlight, outcome: InvocationOutcome): void {
    // From here, a waiter must look at the store.
    entry.handle = undefined
    // Cancelled or taken over meanwhile: the run is not this attempt's to change.
    if (entry.stopped) {
      this.#over(entry)
      return
    }
    try {
      if (outcome.kind === 'completed') {
        const { attempt, result } = outcome
        // Bound methods rather than closures: with many runs dispatched at
        // once, every run whose end is being written holds one.
        this.#finish(entry.id, { status: 'completed', ok: true, result, attempt }).then(
          this.#written.bind(this, entry),
          this.#failed.bind(this, entry),
        )
      } else {
        this.#record(entry, outcome).then(
          () => this.#over(entry),
          (error: unknown) => this.#failed(entry, error),
        )
      }
    } catch (error) {
      this.#failed(entry, error)
    }
  }

  /** The run's end is written (or it was no longer running): what follows it, then the dispatch is over. */
  #written(entry: InFlight, done: RunRecord | undefined, error?: string): void {
    try {
      this.#finished(done, error)
    } catch (thrown) {
      this.#failed(entry, thrown)
      return
    }
    this.#over(entry)
  }

  #failed(entry: InFlight, error: unknown): void {
    // The attempt's end (or its retry, or its wait) found the run another
    // process's: a lost lease, not a failure to process the run.
    if (error instanceof LeaseLostError) this.#loseLease(entry.id)
    else this.#logger.error(`[svc] task "${entry.taskName}": run ${entry.id} could not be processed: ${errorMessage(error)}`)
    this.#over(entry)
  }

  /** Ends a dispatch: gives its lease up, and dispatches the run again if something asked for it meanwhile. */
  #over(entry: InFlight): void {
    if (!entry.leased) {
      this.#leave(entry)
      return
    }
    this.#shared!.releaseLeases(this.#owner, [entry.id])
      .catch((error: unknown) =>
        this.#logger.error(`[svc] task "${entry.taskName}": could not release the lease on run ${entry.id}: ${errorMessage(error)}`),
      )
      .then(() => this.#leave(entry))
  }

  #leave(entry: InFlight): void {
    this.#active.delete(entry.id)
    if (!entry.again) {
      entry.finish()
      return
    }
    this.#store
      .getRun(entry.id)
      .then(
        (latest) => {
          if (latest?.status === 'running') this.#start(latest)
        },
        (error: unknown) =>
          this.#logger.error(`[svc] task "${entry.taskName}": run ${entry.id} could not be dispatched again: ${errorMessage(error)}`),
      )
      .finally(() => entry.finish())
  }

  /** Records an attempt that failed, or the suspension of a run. */
  async #record(run: InFlight, outcome: Exclude<InvocationOutcome, { kind: 'completed' }>): Promise<void> {
    if (outcome.kind === 'suspended') return this.#suspend(run, outcome)
    // An attempt cut short by close() is not the task's failure: record
    // nothing, so the run stays `running` and a durable store's recover()
    // runs it again.
    if (this.#closed) return
    const { attempt } = outcome
    const index = attempt.index
    const retries = this.#tasks.get(run.taskName)!.retries
    // After close() the retry timer is still recorded (Waits.arm saves it and
    // skips the in-process timer), so a durable store can pick it up.
    if (index <= retries && !outcome.final) {
      await this.#store.appendAttempt(run.id, attempt)
      const delay = backoffDelay(index)
      this.#logger.warn(
        `[svc] task "${run.taskName}": attempt ${index} of ${retries + 1} failed (run ${run.id}): ${outcome.error}; retrying in ${delay} ms`,
      )
      const dueAt = new Date(Date.now() + delay).toISOString()
      await this.#waits.arm({ id: timerId(run.id, 'retry'), runId: run.id, kind: 'retry', dueAt })
      return
    }
    this.#finished(await this.#finish(run.id, { status: 'failed', ok: false, attempt }), outcome.error, index)
  }

  /**
   * Moves a running run to `status`; resolves to the finished run, or to
   * nothing when it was no longer running. Not async: every run whose end
   * is being written would hold its frame.
   */
  #finish(
    runId: string,
    patch: { status: 'completed' | 'failed'; ok: boolean; result?: unknown; attempt?: Attempt },
  ): Promise<RunRecord | undefined> {
    return this.#store.updateRun(runId, { ...patch, finishedAt: isoNow(), suspended: undefined }, RUNNING)
  }

  /** What follows a run's end here: its change, a failure logged, its waiters and waiting parents woken. */
  #finished(done: RunRecord | undefined, error?: string, attempts?: number): void {
    if (!done) return
    const entry = this.#active.get(done.id)
    if (entry) entry.ended = true
    this.#changes.emit(done)
    if (done.status === 'failed') {
      // A background failure is never silent: it is logged with the task it came from.
      const after = attempts === undefined ? '' : ` after ${attempts} attempt${attempts === 1 ? '' : 's'}`
      const cron = done.trigger === 'cron' ? 'scheduled ' : ''
      this.#logger.error(`[svc] ${cron}task "${done.taskName}" failed${after} (run ${done.id}): ${error}`)
    }
    // Wake its waiters and every suspended run that waits for it.
    this.#waiters.settle(done)
    this.#waits.finished(done)
    this.#promoteLater(done.taskName)
  }

  async #suspend(run: InFlight, outcome: Extract<InvocationOutcome, { kind: 'suspended' }>): Promise<void> {
    const { stepKey, waitpoint } = outcome.signal
    if (outcome.swallowed) {
      this.#logger.warn(
        `[svc] task "${run.taskName}": the handler caught the suspension of step "${stepKey}" instead of letting it unwind; the run is suspended anyway. Rethrow it from catch blocks: if (isSuspension(error)) throw error`,
      )
    }
    const saved = await this.#store.updateRun(run.id, { status: 'suspended', suspended: { stepKey, waitpoint } }, { status: 'running' })
    if (!saved) return
    this.#changes.emit(saved)
    // A suspended run holds no slot.
    this.#promoteLater(saved.taskName)
    await this.#waits.armWaitpoint(saved)
  }

  /** The status a run of this task takes when it may start: `queued` under `concurrency` or `rateLimit`. */
  #startStatus(taskName: string): 'running' | 'queued' {
    return limitsStarts(this.#tasks.get(taskName)?.flow) ? 'queued' : 'running'
  }

  /**
   * Starts the queued runs of a task that its limits let start now
   * (`RunStore.startQueued`, atomic in every store, so callers racing in
   * any process never exceed them); when the rate limit blocks one, a
   * `queue` timer looks again once its window frees a place.
   */
  async #promote(taskName: string): Promise<void> {
    const def = this.#tasks.get(taskName)
    if (this.#closed || !def || !limitsStarts(def.flow)) return
    const { started, wake } = await this.#store.startQueued(taskName, def.flow, new Date().toISOString())
    for (const run of started) {
      this.#changes.emit(run)
      this.#start(run)
    }
    if (wake) await this.#waits.arm({ id: `${taskName}:queue`, runId: wake.runId, kind: 'queue', dueAt: wake.at })
  }

  /** `#promote` from a path that does not wait for it; a failure is logged with the task. */
  #promoteLater(taskName: string): void {
    if (!limitsStarts(this.#tasks.get(taskName)?.flow)) return
    this.#promote(taskName).catch((error) =>
      this.#logger.error(`[svc] task "${taskName}": could not start its queued runs: ${errorMessage(error)}`),
    )
  }

  /** After a restart, and in each sweep of a shared store: starts the queued runs of every task whose limits allow it. */
  async #promoteQueued(): Promise<void> {
    if (!this.#limited) return
    // Counted, not listed: only which tasks have queued runs matters here.
    for (const { taskName } of await this.#store.countRunsByTask('queued')) await this.#promote(taskName)
  }
}
