/**
 * The in-memory run store, the default: runs live in the process and do not
 * survive a restart. It is bounded so a long-lived server does not grow forever:
 * finished runs are evicted, and new runs are refused while the live ones
 * fill the bound.
 */
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import { StoreFullError } from '../errors.ts'
import type { RunPatch, RunQuery, RunStore, StartedRuns, TimerRecord, TokenRecord } from './store.ts'
import { type FlowLimits, flowKey, planStarts, startedRun } from './flow.ts'
import { StepLog } from './step-log.ts'
import { applyRunPatch, isFinished, settleTokenRecord, statusMatches } from './store.ts'

export interface MemoryRunStoreOptions {
  /**
   * How many runs to retain. Past it, the runs that finished (completed,
   * failed or cancelled) longest ago are evicted first, with their tokens and
   * idempotency keys. Scheduled, running and suspended runs are never
   * evicted: once `maxRuns` of them are live, `createRun` rejects with
   * `StoreFullError` (503 `STORE_FULL`) until some finish.
   * @default 10000
   */
  maxRuns?: number
}

/** Default bound of the memory store. */
export const DEFAULT_MAX_RUNS = 10_000

export class MemoryRunStore implements RunStore {
  readonly maxRuns: number
  // Map iteration follows insertion order: `runs` is creation order and
  // `finished` is the order in which runs finished, oldest first.
  #runs = new Map<string, StoredRun>()
  #finished = new Set<string>()
  #idempotency = new Map<string, string>()
  #timers = new Map<string, TimerRecord>()
  #tokens = new Map<string, TokenRecord>()
  #tokensByRun = new Map<string, string[]>()
  // Per task, the ids of its queued and running runs: what `startQueued`
  // weighs under a concurrency limit, without a pass over every retained run.
  // Kept only for tasks `startQueued` was asked about, the ones with limits:
  // for the others it would be one more entry per run in flight, never read.
  #inFlow = new Map<string, Set<string>>()

  constructor(options: MemoryRunStoreOptions = {}) {
    const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS
    if (!Number.isInteger(maxRuns) || maxRuns < 1) {
      throw new TypeError(`MemoryRunStore: maxRuns must be a positive integer (got ${String(maxRuns)})`)
    }
    this.maxRuns = maxRuns
  }

  /** Number of runs retained. */
  get size(): number {
    return this.#runs.size
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    if (this.#runs.has(run.id)) throw new Error(`MemoryRunStore: run "${run.id}" already exists`)
    const scoped = run.idempotencyKey === undefined ? undefined : idempotencyScope(run.taskName, run.idempotencyKey)
    if (scoped !== undefined) {
      const holder = this.#idempotency.get(scoped)
      const existing = holder === undefined ? undefined : this.#runs.get(holder)
      if (existing) return copyRun(existing)
    }
    // Live runs are never evicted, so a store full of them can only refuse.
    if (!isFinished(run.status) && this.#runs.size - this.#finished.size >= this.maxRuns) {
      throw new StoreFullError('MemoryRunStore', this.maxRuns)
    }
    if (scoped !== undefined) this.#idempotency.set(scoped, run.id)
    const attempts = run.attempts.length === 0 ? NO_ATTEMPTS : run.attempts.map(copyAttempt)
    const stored: StoredRun = { ...run, attempts, steps: StepLog.from(run.steps) }
    this.#runs.set(run.id, stored)
    this.#track(stored)
    if (isFinished(stored.status)) this.#finished.add(run.id)
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
    if (patch.attempt === undefined) applyRunPatch(run, patch)
    else {
      run.attempts = withAttempt(run.attempts, patch.attempt)
      applyRunPatch(run, { ...patch, attempt: undefined })
    }
    this.#track(run)
    if (isFinished(run.status)) {
      if (!this.#finished.has(id)) {
        this.#finished.add(id)
        this.#evict()
      }
    } else {
      this.#finished.delete(id)
    }
    return copyRun(run)
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    const run = this.#require(runId)
    run.attempts = withAttempt(run.attempts, attempt)
  }

  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const run = this.#require(runId)
    ;(run.steps ??= new StepLog()).set(key, step)
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const limit = query.limit ?? Infinity
    const statuses = query.status
    const out: RunRecord[] = []
    const all = [...this.#runs.values()]
    let start = all.length - 1
    if (query.cursor !== undefined) {
      if (!this.#runs.has(query.cursor)) return out
      start = all.findLastIndex((run) => run.id === query.cursor) - 1
    }
    for (let i = start; i >= 0 && out.length < limit; i--) {
      const run = all[i]
      if (query.taskName !== undefined && run.taskName !== query.taskName) continue
      if (statuses !== undefined && !statusMatches(run.status, statuses)) continue
      out.push(copyRun(run))
    }
    return out
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    this.#timers.set(timer.id, { ...timer })
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    const timer = this.#timers.get(id)
    if (timer) this.#timers.delete(id)
    return timer
  }

  async listTimers(): Promise<TimerRecord[]> {
    return [...this.#timers.values()].map((timer) => ({ ...timer }))
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    const existing = this.#tokens.get(token.id)
    if (existing) return { ...existing }
    this.#tokens.set(token.id, { ...token })
    const ids = this.#tokensByRun.get(token.runId)
    if (ids) ids.push(token.id)
    else this.#tokensByRun.set(token.runId, [token.id])
    return { ...token }
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    const token = this.#tokens.get(id)
    return token && { ...token }
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    const token = this.#tokens.get(id)
    if (!token) return undefined
    if (token.status !== 'waiting') return { settled: false, token: { ...token } }
    settleTokenRecord(token, status, payload)
    return { settled: true, token: { ...token } }
  }

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
      for (const id of this.#flowing(taskName)) {
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
        waiting.input = run.input
        waiting.runAt = run.runAt
        return copyRun(waiting)
      }
    }
    return this.createRun(run)
  }

  /** The ids of a task's queued and running runs, gathered the first time it is asked for. */
  #flowing(taskName: string): Set<string> {
    let ids = this.#inFlow.get(taskName)
    if (ids === undefined) {
      ids = new Set()
      for (const run of this.#runs.values()) if (run.taskName === taskName && isFlowing(run)) ids.add(run.id)
      this.#inFlow.set(taskName, ids)
    }
    return ids
  }

  /** Keeps `#inFlow` in step with a run's status, for the tasks it holds. */
  #track(run: StoredRun): void {
    const ids = this.#inFlow.get(run.taskName)
    if (ids === undefined) return
    if (isFlowing(run)) ids.add(run.id)
    else ids.delete(run.id)
  }

  #require(runId: string): StoredRun {
    const run = this.#runs.get(runId)
    if (!run) throw new Error(`MemoryRunStore: unknown run "${runId}"`)
    return run
  }

  /** Drops the runs that finished longest ago until the bound holds again. */
  #evict(): void {
    if (this.#runs.size <= this.maxRuns) return
    for (const id of this.#finished) {
      if (this.#runs.size <= this.maxRuns) break
      this.#finished.delete(id)
      const run = this.#runs.get(id)
      this.#runs.delete(id)
      if (run?.idempotencyKey !== undefined) {
        const scoped = idempotencyScope(run.taskName, run.idempotencyKey)
        if (this.#idempotency.get(scoped) === id) this.#idempotency.delete(scoped)
      }
      const tokens = this.#tokensByRun.get(id)
      if (tokens) {
        for (const tokenId of tokens) this.#tokens.delete(tokenId)
        this.#tokensByRun.delete(id)
      }
    }
  }
}

function isFlowing(run: StoredRun): boolean {
  return run.status === 'queued' || run.status === 'running'
}

/** A run as the store holds it: its steps in a log of their own, when it has any. */
type StoredRun = Omit<RunRecord, 'steps'> & { steps: StepLog | undefined }

const byCreation = (a: StoredRun, b: StoredRun) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0)

// Idempotency keys are scoped to their task: two tasks may use the same key.
function idempotencyScope(taskName: string, key: string): string {
  return `${taskName}\u0000${key}`
}

/**
 * The attempts of every stored run that has none yet, most runs in flight:
 * one array for all of them. Nothing appends in place (`withAttempt` makes
 * a new array), and every copy handed out is a new array.
 */
const NO_ATTEMPTS: Attempt[] = Object.freeze([]) as unknown as Attempt[]

function copyAttempt(attempt: Attempt): Attempt {
  return { ...attempt }
}

/**
 * The attempts with a copy of `attempt` after them, in an array of their
 * exact size: `push` onto a run's empty array (most runs end after one
 * attempt) leaves room for 17, which every retained run would carry.
 */
function withAttempt(attempts: Attempt[], attempt: Attempt): Attempt[] {
  return attempts.concat(copyAttempt(attempt))
}

// Attempts and step records are never changed in place once stored, so a
// copy of the containers is enough to keep callers from changing the store.
function copyRun(run: StoredRun): RunRecord {
  return { ...run, attempts: run.attempts.slice(), steps: run.steps === undefined ? {} : run.steps.take() }
}
