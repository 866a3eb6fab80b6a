/**
 * `DurableObjectRunStore`: a durable `RunStore` on a SQLite-backed Durable
 * Object's storage (`ctx.storage.sql`). It keeps the tables of
 * `SqliteRunStore` (runs with their JSON record, timers, tokens), plus each
 * timer's due time as a number, which the object's alarm is set from.
 *
 * The SQL API is synchronous and a Durable Object runs one piece of
 * JavaScript at a time, so every compare-and-set point of the `RunStore`
 * contract is one synchronous block that no other call can interleave with;
 * `transactionSync` makes its statements commit together or not at all.
 * Edge-safe: no `node:` import.
 */
import { StoreFullError } from '../runtime/errors.ts'
import { DEFAULT_MAX_RUNS } from '../runtime/tasks/memory-store.ts'
import {
  applyRunPatch,
  isFinished,
  statusMatches,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type TimerRecord,
  type TokenRecord,
} from '../runtime/tasks/store.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import { describe } from '../runtime/describe.ts'

/** The parts of a Durable Object's `SqlStorage` the store uses. */
export interface SqlStorageLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] }
}

/** The parts of a Durable Object's `DurableObjectStorage` the store uses. */
export interface SqlDurableStorageLike {
  readonly sql: SqlStorageLike
  transactionSync<T>(fn: () => T): T
}

export interface DurableObjectRunStoreOptions {
  /**
   * How many runs to retain; the runs that finished longest ago are evicted
   * first, live runs never (see `MemoryRunStore`).
   * @default 10000
   */
  maxRuns?: number
  /**
   * Called after every write that may move the earliest pending timer or
   * start or end an attempt (timers saved or taken, runs created or
   * updated), with the run when one changed.
   */
  onChange?: (run?: RunRecord) => void
}

const WHERE = 'DurableObjectRunStore'

// `CREATE … IF NOT EXISTS`: the constructor runs on every wake of the object.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  task_name TEXT NOT NULL,
  status TEXT NOT NULL,
  idempotency_key TEXT,
  finished_seq INTEGER,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_task ON runs (task_name, seq);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, seq);
CREATE INDEX IF NOT EXISTS runs_by_finish ON runs (finished_seq) WHERE finished_seq IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_key ON runs (task_name, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS timers (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS timers_by_due ON timers (due_at);
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tokens_by_run ON tokens (run_id);
`

interface RunRow {
  record: string
  finished_seq: number | null
}

export class DurableObjectRunStore implements RunStore {
  /** Records live in the object's storage and survive eviction and restarts. */
  readonly durable = true
  readonly maxRuns: number
  readonly #storage: SqlDurableStorageLike
  readonly #onChange: (run?: RunRecord) => void

  constructor(storage: SqlDurableStorageLike, options: DurableObjectRunStoreOptions = {}) {
    if (typeof storage?.sql?.exec !== 'function') {
      throw new TypeError(
        `${WHERE}: storage must be a SQLite-backed Durable Object's ctx.storage; declare the class under new_sqlite_classes in the wrangler migrations (got ${describe(storage?.sql)})`,
      )
    }
    const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS
    if (!Number.isInteger(maxRuns) || maxRuns < 1)
      throw new RangeError(`${WHERE}: maxRuns must be a positive integer (got ${describe(maxRuns)})`)
    this.maxRuns = maxRuns
    this.#storage = storage
    this.#onChange = options.onChange ?? (() => {})
    try {
      storage.sql.exec(SCHEMA)
    } catch (error) {
      // A class declared under new_classes has key-value storage only; the platform's message says how to switch.
      throw new Error(`${WHERE}: cannot create its tables: ${(error as Error).message}`, { cause: error })
    }
  }

  /** Epoch ms of the earliest pending timer, or `undefined` when none is pending. */
  nextTimerAt(): number | undefined {
    const [row] = this.#all('SELECT min(due_at) AS at FROM timers')
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at)
  }

  /** Whether a run is `running`: an attempt is in flight, or about to start. */
  hasRunning(): boolean {
    return this.#all(`SELECT 1 FROM runs WHERE status = 'running' LIMIT 1`).length > 0
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    const record = JSON.stringify(run)
    const stored = this.#write(() => {
      if (this.#all('SELECT 1 FROM runs WHERE id = ?', run.id).length) throw new Error(`${WHERE}: run "${run.id}" already exists`)
      if (run.idempotencyKey !== undefined) {
        const [holder] = this.#all('SELECT record FROM runs WHERE task_name = ? AND idempotency_key = ?', run.taskName, run.idempotencyKey)
        if (holder) return { run: JSON.parse(holder.record as string) as RunRecord, created: false }
      }
      // Live runs are never evicted, so a store full of them can only refuse.
      if (!isFinished(run.status) && this.#count('SELECT count(*) AS n FROM runs WHERE finished_seq IS NULL') >= this.maxRuns) {
        throw new StoreFullError(WHERE, this.maxRuns)
      }
      this.#storage.sql.exec(
        'INSERT INTO runs (id, task_name, status, idempotency_key, finished_seq, record) VALUES (?, ?, ?, ?, ?, ?)',
        run.id,
        run.taskName,
        run.status,
        run.idempotencyKey ?? null,
        this.#finishSeq(run.status, null),
        record,
      )
      this.#evict()
      return { run: JSON.parse(record) as RunRecord, created: true }
    })
    if (stored.created) this.#onChange(stored.run)
    return stored.run
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    const row = this.#row(id)
    return row && (JSON.parse(row.record) as RunRecord)
  }

  async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const updated = this.#write(() => {
      const row = this.#row(id)
      if (!row) return undefined
      const run = JSON.parse(row.record) as RunRecord
      if (expect && !statusMatches(run.status, expect.status)) return undefined
      applyRunPatch(run, patch)
      const record = JSON.stringify(run)
      const finishSeq = this.#finishSeq(run.status, row.finished_seq)
      this.#storage.sql.exec('UPDATE runs SET status = ?, finished_seq = ?, record = ? WHERE id = ?', run.status, finishSeq, record, id)
      if (finishSeq !== null && row.finished_seq === null) this.#evict()
      return JSON.parse(record) as RunRecord
    })
    if (updated) this.#onChange(updated)
    return updated
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    this.#change(runId, (run) => run.attempts.push(attempt))
  }

  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    this.#change(runId, (run) => {
      run.steps[key] = step
    })
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const where: string[] = []
    const params: unknown[] = []
    if (query.taskName !== undefined) {
      where.push('task_name = ?')
      params.push(query.taskName)
    }
    if (query.status !== undefined) {
      const statuses: readonly RunStatus[] = typeof query.status === 'string' ? [query.status] : query.status
      if (statuses.length === 0) return []
      where.push(`status IN (${statuses.map(() => '?').join(', ')})`)
      params.push(...statuses)
    }
    // As the memory store: a fractional limit rounds up, 0 or less returns none, -1 is SQLite's "no limit".
    const limit = query.limit ?? Infinity
    if (!(limit > 0)) return []
    params.push(limit === Infinity ? -1 : Math.ceil(limit))
    const filter = where.length === 0 ? '' : `WHERE ${where.join(' AND ')} `
    return this.#all(`SELECT record FROM runs ${filter}ORDER BY seq DESC LIMIT ?`, ...params).map(
      (row) => JSON.parse(row.record as string) as RunRecord,
    )
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    // An upsert keeps the timer's place in listTimers, as Map#set does.
    this.#storage.sql.exec(
      'INSERT INTO timers (id, run_id, due_at, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, due_at = excluded.due_at, record = excluded.record',
      timer.id,
      timer.runId,
      Date.parse(timer.dueAt),
      JSON.stringify(timer),
    )
    this.#onChange()
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    // DELETE … RETURNING is the claim: only the call that deleted the row gets it.
    const [row] = this.#all('DELETE FROM timers WHERE id = ? RETURNING record', id)
    if (!row) return undefined
    this.#onChange()
    return JSON.parse(row.record as string) as TimerRecord
  }

  async listTimers(): Promise<TimerRecord[]> {
    return this.#all('SELECT record FROM timers ORDER BY seq').map((row) => JSON.parse(row.record as string) as TimerRecord)
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    // DO NOTHING: a replay must not reset a token that was settled meanwhile.
    this.#storage.sql.exec(
      'INSERT INTO tokens (id, run_id, status, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
      token.id,
      token.runId,
      token.status,
      JSON.stringify(token),
    )
    return this.#token(token.id)!
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    return this.#token(id)
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    const token = this.#token(id)
    if (!token) return undefined
    if (token.status !== 'waiting') return { settled: false, token }
    token.status = status
    token.settledAt = new Date().toISOString()
    if (status === 'completed' && payload !== undefined) token.payload = payload
    const record = JSON.stringify(token)
    this.#storage.sql.exec('UPDATE tokens SET status = ?, record = ? WHERE id = ?', status, record, id)
    return { settled: true, token: JSON.parse(record) as TokenRecord }
  }

  #all(query: string, ...bindings: unknown[]): Record<string, unknown>[] {
    return this.#storage.sql.exec(query, ...bindings).toArray()
  }

  #count(query: string): number {
    return Number(this.#all(query)[0]?.n ?? 0)
  }

  /** Several statements that commit together; a throw rolls them all back. */
  #write<T>(fn: () => T): T {
    return this.#storage.transactionSync(fn)
  }

  #row(id: string): RunRow | undefined {
    return this.#all('SELECT record, finished_seq FROM runs WHERE id = ?', id)[0] as unknown as RunRow | undefined
  }

  #token(id: string): TokenRecord | undefined {
    const [row] = this.#all('SELECT record FROM tokens WHERE id = ?', id)
    return row && (JSON.parse(row.record as string) as TokenRecord)
  }

  #change(runId: string, edit: (run: RunRecord) => void): void {
    this.#write(() => {
      const row = this.#row(runId)
      if (!row) throw new Error(`${WHERE}: unknown run "${runId}"`)
      const run = JSON.parse(row.record) as RunRecord
      edit(run)
      this.#storage.sql.exec('UPDATE runs SET record = ? WHERE id = ?', JSON.stringify(run), runId)
    })
  }

  /** The eviction position of a run: kept while it stays finished, the next one when it has just finished, none while live. */
  #finishSeq(status: RunStatus, current: number | null): number | null {
    if (!isFinished(status)) return null
    if (current !== null) return current
    return this.#count('SELECT coalesce(max(finished_seq), 0) + 1 AS n FROM runs')
  }

  /** Drops the runs that finished longest ago, and their tokens, until the bound holds again. */
  #evict(): void {
    const excess = this.#count('SELECT count(*) AS n FROM runs') - this.maxRuns
    if (excess <= 0) return
    const oldest = 'SELECT id FROM runs WHERE finished_seq IS NOT NULL ORDER BY finished_seq LIMIT ?'
    this.#storage.sql.exec(`DELETE FROM tokens WHERE run_id IN (${oldest})`, excess)
    // Idempotency keys live on the run's row, so they go with it.
    this.#storage.sql.exec(`DELETE FROM runs WHERE id IN (${oldest})`, excess)
  }
}
