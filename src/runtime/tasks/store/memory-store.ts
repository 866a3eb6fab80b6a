/**
 * The in-memory run store, the default: runs live in the process and do not
 * survive a restart. It is bounded so a long-lived server does not grow forever,
 * by a count of runs and by the JSON they hold (run-size.ts): finished runs
 * are evicted, and new runs are refused while the live ones fill a bound.
 */
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../../types.ts'
import { StoreFullError } from '../../errors.ts'
import type { EventRecord, RunPatch, RunQuery, RunStore, StartedRuns, TaskRunCount, TimerRecord, TokenRecord } from './store.ts'
import { type FlowLimits, flowKey, planStarts, startedRun } from '../flow/flow.ts'
import { jsonLength } from '../base/json.ts'
import { groupDigits } from './payload-limit.ts'
import { attemptSize, runSize, stepSize } from './run-size.ts'
import { StepLog } from './step-log.ts'
import { applyRunPatch, insertEach, isFinished, statusMatches, waitsForEvent } from './store.ts'
import { MemoryEventLog } from './memory-events.ts'
import type { EventEffects, EventListQuery, StoreLifecycle } from '../../types/run-store.ts'
import type { EventMatch } from '../../events/match.ts'
import { type MemoryRunStoreOptions, resolveMemoryOptions } from './memory-options.ts'
import { RunIndexes } from './memory-indexes.ts'
import { MemorySchedules } from './memory-schedules.ts'
import { MemoryTokens } from './memory-tokens.ts'
import { MemoryUpdates } from './memory-updates.ts'
import { byCreation, copyAttempt, copyRun, idempotencyScope, InFlow, NO_ATTEMPTS, type StoredRun, withAttempt } from './memory-records.ts'
import { matchesSearch, searches } from './run-search.ts'

export { DEFAULT_MAX_BYTES, type MemoryRunStoreOptions } from './memory-options.ts'

export class MemoryRunStore implements RunStore, StoreLifecycle {
  readonly maxRuns: number
  readonly maxBytes: number
  // Map iteration follows insertion order: `runs` is creation order and
  // `finished` is the order in which runs finished, oldest first.
  #runs = new Map<string, StoredRun>()
  #finished = new Set<string>()
  #idempotency = new Map<string, string>()
  #timers = new Map<string, TimerRecord>()
  readonly #events: MemoryEventLog
  /** The queued and running runs of the tasks `startQueued` was asked about (memory-records.ts). */
  readonly #inFlow = new InFlow()
  /** Creation order, and the runs that wait for an event by its name (memory-indexes.ts). */
  readonly #indexes = new RunIndexes()
  /** Runtime schedules (memory-schedules.ts). */
  readonly #schedules = new MemorySchedules()
  /** Tokens and signals (memory-tokens.ts). */
  readonly #tokens: MemoryTokens
  /** Updates (memory-updates.ts). */
  readonly #updates = new MemoryUpdates((runId, bytes) => this.#heldGrew(runId, bytes))
  /** What each retained run weighs (run-size.ts), by id; kept beside the record so reads do not copy it. */
  #sizes = new Map<string, number>()
  #bytes = 0
  /** The part of `#bytes` live runs hold: they are never evicted. */
  #liveBytes = 0

  constructor(options: MemoryRunStoreOptions = {}) {
    const { maxRuns, maxBytes, maxEvents, clock } = resolveMemoryOptions(options)
    this.maxRuns = maxRuns
    this.maxBytes = maxBytes
    this.#events = new MemoryEventLog(maxEvents, clock)
    this.#tokens = new MemoryTokens(clock, (runId, bytes) => this.#heldGrew(runId, bytes))
  }

  async putEvent(event: EventRecord): Promise<{ event: EventRecord; created: boolean }> {
    // Finished runs and older events make way; live runs do not.
    const size = MemoryEventLog.sizeOf(event)
    if (this.#liveBytes + size > this.maxBytes && !this.#events.holds(event.id)) {
      throw new StoreFullError(
        'MemoryRunStore',
        this.maxRuns,
        `MemoryRunStore is full: an event of ${groupDigits(size)} bytes of JSON does not fit beside its live runs' ${groupDigits(this.#liveBytes)}, ` +
          `its maxBytes bound of ${groupDigits(this.maxBytes)}. Nothing of it was kept; retry once runs finish, or raise maxBytes`,
      )
    }
    const put = this.#events.put(event)
    if (put.created) this.#evict()
    return put
  }

  async eventsSince(name: string, since: string, limit: number, match?: EventMatch): Promise<EventRecord[]> {
    return this.#events.since(name, since, limit, match)
  }

  async listEvents(query: EventListQuery): Promise<{ events: EventRecord[]; cursor?: string }> {
    return this.#events.list(query)
  }

  async noteEventEffects(id: string, effects: EventEffects): Promise<void> {
    this.#events.noteEffects(id, effects)
  }

  /** How many runs it holds, finished ones included. */
  async size(): Promise<number> {
    return this.#runs.size
  }

  /** Holds nothing open: the runs go with the store once nothing references it. */
  async close(): Promise<void> {}

  /** The JSON the retained runs and held events hold, in bytes, as `maxBytes` counts it. */
  get bytes(): number {
    return this.#bytes + this.#events.bytes
  }

  /** Each run as `createRun` does, in one turn: a run past the bound is a `StoreFullError` in its place. */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    return insertEach(runs, (run) => this.#insert(run))
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    return this.#insert(run)
  }

  #insert(run: RunRecord): RunRecord {
    if (this.#runs.has(run.id)) throw new Error(`MemoryRunStore: run "${run.id}" already exists`)
    const scoped = run.idempotencyKey === undefined ? undefined : idempotencyScope(run.taskName, run.idempotencyKey)
    if (scoped !== undefined) {
      const holder = this.#idempotency.get(scoped)
      const existing = holder === undefined ? undefined : this.#runs.get(holder)
      if (existing) return copyRun(existing)
    }
    // Live runs are never evicted, so a store full of them can only refuse.
    const live = !isFinished(run.status)
    if (live && this.#runs.size - this.#finished.size >= this.maxRuns) {
      throw new StoreFullError('MemoryRunStore', this.maxRuns)
    }
    if (live && this.#liveBytes >= this.maxBytes) {
      throw new StoreFullError(
        'MemoryRunStore',
        this.maxRuns,
        `MemoryRunStore is full: its live runs (scheduled, queued, running or suspended) hold ${groupDigits(this.#liveBytes)} bytes of JSON, ` +
          `its maxBytes bound of ${groupDigits(this.maxBytes)}. No new run is accepted until some finish; retry later, or raise maxBytes`,
      )
    }
    if (scoped !== undefined) this.#idempotency.set(scoped, run.id)
    const attempts = run.attempts.length === 0 ? NO_ATTEMPTS : run.attempts.map(copyAttempt)
    const stored: StoredRun = { ...run, attempts, steps: StepLog.from(run.steps) }
    this.#runs.set(run.id, stored)
    this.#inFlow.track(stored)
    this.#indexes.added(stored)
    this.#sizes.set(run.id, 0)
    this.#grow(run.id, runSize(run), live)
    if (!live) this.#finished.add(run.id)
    this.#evict()
    // The caller's record is not the stored one, so it serves as the copy.
    return run
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    const run = this.#runs.get(id)
    return run && copyRun(run)
  }

  async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const run = this.#runs.get(id)
    if (!run) return undefined
    if (expect && !statusMatches(run.status, expect.status)) return undefined
    const wasLive = !this.#finished.has(id)
    let growth = 0
    if ('result' in patch) growth += jsonLength(patch.result) - jsonLength(run.result)
    if ('chunks' in patch) growth += (patch.chunks?.bytes ?? 0) - (run.chunks?.bytes ?? 0)
    if (patch.attempt === undefined) applyRunPatch(run, patch)
    else {
      growth += attemptSize(patch.attempt)
      run.attempts = withAttempt(run.attempts, patch.attempt)
      applyRunPatch(run, { ...patch, attempt: undefined })
    }
    this.#inFlow.track(run)
    this.#indexes.track(run)
    const live = !isFinished(run.status)
    if (live !== wasLive) {
      // The run's whole weight moves between the live and the finished part.
      const size = this.#sizes.get(id)!
      this.#liveBytes += live ? size : -size
      if (live) this.#finished.delete(id)
      else this.#finished.add(id)
    }
    this.#grow(id, growth, live)
    if (!live || growth > 0) this.#evict()
    return copyRun(run)
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    const run = this.#require(runId)
    run.attempts = withAttempt(run.attempts, attempt)
    this.#grew(runId, attemptSize(attempt))
  }

  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const run = this.#require(runId)
    const steps = (run.steps ??= new StepLog())
    const replaced = steps.get(key)
    // Measured as given: the log keeps a copy of the output, which no check has measured.
    const growth = stepSize(key, step) - (replaced === undefined ? 0 : stepSize(key, replaced))
    steps.set(key, step)
    this.#grew(runId, growth)
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const limit = query.limit ?? Infinity
    const statuses = query.status
    const search = searches(query)
    const out: RunRecord[] = []
    if (query.cursor !== undefined && !this.#runs.has(query.cursor)) return out
    const all = query.waitingForEvent === undefined ? [...this.#runs.values()] : this.#indexes.waitingFor(query.waitingForEvent, this.#runs)
    let start = all.length - 1
    if (query.cursor !== undefined) {
      const at = this.#indexes.order(query.cursor)!
      // The runs created before the cursor's, which need not be in `all`: it may no longer wait.
      while (start >= 0 && this.#indexes.order(all[start].id)! >= at) start--
    }
    for (let i = start; i >= 0 && out.length < limit; i--) {
      const run = all[i]
      if (query.taskName !== undefined && run.taskName !== query.taskName) continue
      if (statuses !== undefined && !statusMatches(run.status, statuses)) continue
      if (query.waitingForEvent !== undefined && !waitsForEvent(run, query.waitingForEvent)) continue
      if (query.version !== undefined && run.version !== query.version) continue
      if (search && !matchesSearch(run, query)) continue
      out.push(copyRun(run))
    }
    return out
  }

  putSchedule = this.#schedules.putSchedule.bind(this.#schedules)
  getSchedule = this.#schedules.getSchedule.bind(this.#schedules)
  listSchedules = this.#schedules.listSchedules.bind(this.#schedules)
  deleteSchedule = this.#schedules.deleteSchedule.bind(this.#schedules)

  async countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<TaskRunCount[]> {
    const counts = new Map<string, number>()
    for (const run of this.#runs.values()) {
      if (statusMatches(run.status, status)) counts.set(run.taskName, (counts.get(run.taskName) ?? 0) + 1)
    }
    return Array.from(counts, ([taskName, count]) => ({ taskName, count }))
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    this.#timers.set(timer.id, { ...timer })
  }

  async dropTimersOf(runId: string): Promise<string[]> {
    const ids: string[] = []
    for (const timer of this.#timers.values()) if (timer.runId === runId) ids.push(timer.id)
    for (const id of ids) this.#timers.delete(id)
    return ids
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    const timer = this.#timers.get(id)
    if (timer) this.#timers.delete(id)
    return timer
  }

  async listTimers(): Promise<TimerRecord[]> {
    return [...this.#timers.values()].map((timer) => ({ ...timer }))
  }

  // Tokens and signals: memory-tokens.ts.
  putToken(token: TokenRecord): Promise<TokenRecord> {
    return this.#tokens.putToken(token)
  }
  getToken(id: string): Promise<TokenRecord | undefined> {
    return this.#tokens.getToken(id)
  }
  settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    return this.#tokens.settleToken(id, status, payload)
  }
  // Called through: the tokens are made in the constructor, after these fields.
  putSignal: MemoryTokens['putSignal'] = (signal, maxWaiting) => this.#tokens.putSignal(signal, maxWaiting)
  takeSignal: MemoryTokens['takeSignal'] = (tokenId, name) => this.#tokens.takeSignal(tokenId, name)
  listSignals: MemoryTokens['listSignals'] = (runId) => this.#tokens.listSignals(runId)
  // Updates: memory-updates.ts.
  putUpdate = this.#updates.putUpdate.bind(this.#updates)
  answerUpdate = this.#updates.answerUpdate.bind(this.#updates)
  getUpdate = this.#updates.getUpdate.bind(this.#updates)
  listUpdates = this.#updates.listUpdates.bind(this.#updates)

  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    const queued: StoredRun[] = []
    const running: StoredRun[] = []
    const started: StoredRun[] = []
    if (limits.rateLimit) {
      // The window counts every retained start, finished runs included.
      for (const run of this.#runs.values()) {
        if (run.taskName !== taskName) continue
        if (run.status === 'queued') queued.push(run)
        else if (run.status === 'running') running.push(run)
        if (run.startedAt !== undefined) started.push(run)
      }
    } else {
      for (const id of this.#inFlow.of(taskName, this.#runs.values())) {
        const run = this.#runs.get(id)!
        if (run.status === 'queued') queued.push(run)
        else running.push(run)
      }
      // A run queued again after a wait joins the set last; its place is its creation.
      if (queued.some((run, i) => i > 0 && byCreation(queued[i - 1], run) > 0)) queued.sort(byCreation)
    }
    const plan = planStarts(limits, queued, running, started, Date.parse(now))
    const out: StartedRuns = { started: [] }
    for (const run of plan.start) {
      const next = startedRun(run, now)
      this.#runs.set(run.id, next)
      out.started.push(copyRun(next))
    }
    if (plan.wake) out.wake = plan.wake
    return out
  }

  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const held = run.idempotencyKey === undefined ? undefined : this.#idempotency.get(idempotencyScope(run.taskName, run.idempotencyKey))
    if (held === undefined || !this.#runs.has(held)) {
      const key = flowKey(run.input, keyPath)
      for (const waiting of this.#runs.values()) {
        if (waiting.taskName !== run.taskName || waiting.status !== 'scheduled' || flowKey(waiting.input, keyPath) !== key) continue
        const growth = jsonLength(run.input) - jsonLength(waiting.input)
        waiting.input = run.input
        waiting.runAt = run.runAt
        this.#grew(waiting.id, growth)
        return copyRun(waiting)
      }
    }
    return this.createRun(run)
  }

  /** Adds `growth` to the weight of a retained run, live or not. */
  #grow(runId: string, growth: number, live: boolean): void {
    if (growth === 0) return
    this.#sizes.set(runId, this.#sizes.get(runId)! + growth)
    this.#bytes += growth
    if (live) this.#liveBytes += growth
  }

  /** `#grow` for a run whose status does not change, then the bound holds again. */
  #grew(runId: string, growth: number): void {
    this.#grow(runId, growth, !this.#finished.has(runId))
    if (growth > 0) this.#evict()
  }

  /** `#grew` for a run the store still holds: a write to a run it dropped counts nothing. */
  #heldGrew(runId: string, growth: number): void {
    if (this.#sizes.has(runId)) this.#grew(runId, growth)
  }

  #require(runId: string): StoredRun {
    const run = this.#runs.get(runId)
    if (!run) throw new Error(`MemoryRunStore: unknown run "${runId}"`)
    return run
  }

  async pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    const expired: string[] = []
    let seen = 0
    // `#finished` holds its runs in the order they finished.
    for (const id of this.#finished) {
      const run = this.#runs.get(id)
      if (run?.taskName !== taskName) continue
      if (++seen > limit) break
      if (run.finishedAt !== undefined && run.finishedAt < before) expired.push(id)
    }
    for (const id of expired) this.#drop(id)
    return expired.length
  }

  /**
   * Drops the runs that finished longest ago until both bounds hold again,
   * then, while the bytes still do not, the oldest events but the newest
   * (the one just put, if that is what made the store pass its bound).
   */
  #evict(): void {
    const fits = () => this.#runs.size <= this.maxRuns && this.bytes <= this.maxBytes
    if (fits()) return
    for (const id of this.#finished) {
      if (fits()) return
      this.#drop(id)
    }
    while (this.bytes > this.maxBytes && this.#events.size > 1) this.#events.removeOldest()
  }

  /** Deletes a finished run, with its idempotency key, tokens, signals and updates. */
  #drop(id: string): void {
    this.#finished.delete(id)
    const run = this.#runs.get(id)
    this.#runs.delete(id)
    this.#indexes.removed(id)
    this.#bytes -= this.#sizes.get(id) ?? 0
    this.#sizes.delete(id)
    if (run?.idempotencyKey !== undefined) {
      const scoped = idempotencyScope(run.taskName, run.idempotencyKey)
      if (this.#idempotency.get(scoped) === id) this.#idempotency.delete(scoped)
    }
    this.#tokens.dropRun(id)
    this.#updates.dropRun(id)
  }
}
