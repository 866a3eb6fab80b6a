/**
 * `DurableObjectRunStore`: a durable `RunStore` on a SQLite-backed Durable
 * Object's storage (`ctx.storage.sql`). It keeps the tables of
 * `SqliteRunStore` (runs with their JSON record, timers, tokens, events),
 * plus each timer's due time as a number, which the object's alarm is set
 * from.
 *
 * The SQL API is synchronous and a Durable Object runs one piece of
 * JavaScript at a time, so every compare-and-set point of the `RunStore`
 * contract is one synchronous block that no other call can interleave with;
 * `transactionSync` makes its statements commit together or not at all.
 * Edge-safe: no `node:` import.
 */
import { StoreFullError } from '../runtime/errors.ts'
import { DEFAULT_MAX_RUNS } from '../runtime/tasks/store/store-limits.ts'
import {
  COUNT_RUNS,
  countRunsByTaskQuery,
  EVICT_RUNS,
  EVICT_WITH_RUNS,
  INSERT_RUN,
  insertRunValues,
  INSERT_TOKEN,
  LAST_FINISHED_SEQ,
  LIST_TIMERS,
  listRunsQuery,
  PRUNE_RUNS,
  PRUNE_WITH_RUNS,
  RUN_EXISTS,
  type RunRow,
  SELECT_RUN,
  SELECT_RUN_BY_KEY,
  SELECT_RUN_SEQ,
  TAKE_TIMER,
  DROP_RUN_TIMERS,
  UPDATE_RUN,
  UPDATE_RUN_RECORD,
  UPSERT_STEP,
  UPSERT_TIMER_WITH_DUE_AT,
  finishSeqOf,
} from '../runtime/tasks/sql/queries.ts'
import { rowText, wholeText } from '../runtime/tasks/sql/record-text.ts'
import { METADATA_WRITES, metadataChange, tagRows } from '../runtime/tasks/sql/search.ts'
import { joinScheduledSql, startQueuedSql } from '../runtime/tasks/sql/flow.ts'
import { type KitCalls, kitCalls } from '../runtime/tasks/sql/kit-calls.ts'
import { appConnection, type DurableObjectRunStoreOptions, prepareTables, type SqlDurableStorageLike, sqlRunner } from './sql-storage.ts'
import type { EventEffectsHere } from './shard-events.ts'
import { runProcedure, type SqlRunner } from '../runtime/tasks/sql/procedure.ts'
import { settleTokenSql, tokenSql } from '../runtime/tasks/sql/tokens.ts'
import { runSqlTransaction } from '../runtime/tasks/sql/transaction.ts'
import type { FlowLimits } from '../runtime/tasks/flow/flow.ts'
import {
  applyRunPatch,
  type EventRecord,
  isFinished,
  statusMatches,
  insertEach,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type StartedRuns,
  type TaskRunCount,
  type TimerRecord,
  type TokenRecord,
} from '../runtime/tasks/store/store.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { StoreLifecycle } from '../runtime/types/run-store.ts'
import { describe } from '../runtime/describe.ts'
import { eventRuns } from '../runtime/tasks/store/event-list.ts'

export type { DurableObjectRunStoreOptions, SqlDurableStorageLike, SqlStorageLike } from './sql-storage.ts'
export type { EventEffectsHere } from './shard-events.ts'

const WHERE = 'DurableObjectRunStore'

/** Events, runtime schedules and signals: the SQL kit's calls (kit-calls.ts), set by the constructor. */
export interface DurableObjectRunStore extends KitCalls {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor sets every member the interface above declares
export class DurableObjectRunStore implements RunStore, StoreLifecycle {
  /** Records live in the object's storage and survive eviction and restarts. */
  readonly durable = true
  readonly maxRuns: number
  readonly #storage: SqlDurableStorageLike
  /** The object's SQL, for the procedures shared with `SqliteRunStore`. */
  readonly #runner: SqlRunner
  readonly #onChange: (run?: RunRecord) => void
  // The counts of all and of live runs and the last eviction position, read
  // from the tables once and then kept by this store's own writes: the
  // object's storage has no other writer. Counting on every write cost a
  // walk over every retained run. A write that throws rolls back, and so do
  // they.
  #tally: { total: number; live: number; lastFinished: number } | undefined

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
    this.#runner = sqlRunner(storage.sql)
    this.#onChange = options.onChange ?? (() => {})
    try {
      prepareTables(storage)
    } catch (error) {
      // A class declared under new_classes has key-value storage only; the platform's message says how to switch.
      throw new Error(`${WHERE}: cannot create its tables: ${(error as Error).message}`, { cause: error })
    }
    // Writes in one synchronous transaction each.
    Object.assign(
      this,
      kitCalls({ write: (p) => this.#write(() => runProcedure(p, this.#runner)), read: (p) => runProcedure(p, this.#runner) }, WHERE),
    )
  }

  /** Epoch ms of the earliest pending timer, or `undefined` when none is pending. */
  nextTimerAt(): number | undefined {
    const [row] = this.#all('SELECT min(due_at) AS at FROM svc_timers')
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at)
  }

  /** How many runs it holds: the count its own writes keep. */
  async size(): Promise<number> {
    return this.#counts().total
  }

  /** The object owns its storage and closes it: nothing here to let go of. */
  async close(): Promise<void> {}

  /** Whether a run is `running`: an attempt is in flight, or about to start. */
  hasRunning(): boolean {
    return this.#all(`SELECT 1 FROM svc_runs WHERE status = 'running' LIMIT 1`).length > 0
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    const stored = this.#write(() => this.#insertRun(run))
    if (stored.created) this.#onChange(stored.run)
    return stored.run
  }

  /** Every run in one `transactionSync`: a run past the bound is a `StoreFullError` in its place. */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    const stored = this.#write(() => insertEach(runs, (run) => this.#insertRun(run)))
    for (const item of stored) if (!(item instanceof StoreFullError) && item.created) this.#onChange(item.run)
    return stored.map((item) => (item instanceof StoreFullError ? item : item.run))
  }

  /** `createRun` inside a transaction; `created` is false when an idempotency key answered. */
  #insertRun(run: RunRecord): { run: RunRecord; created: boolean } {
    const record = rowText(run)
    if (this.#all(RUN_EXISTS, run.id).length) throw new Error(`${WHERE}: run "${run.id}" already exists`)
    if (run.idempotencyKey !== undefined) {
      const [holder] = this.#all(SELECT_RUN_BY_KEY, run.taskName, run.idempotencyKey)
      if (holder) return { run: JSON.parse(holder.record as string) as RunRecord, created: false }
    }
    // Live runs are never evicted, so a store full of them can only refuse.
    const tally = this.#counts()
    if (!isFinished(run.status) && tally.live >= this.maxRuns) throw new StoreFullError(WHERE, this.maxRuns)
    const finishSeq = this.#finishSeq(run.status, null)
    const [inserted] = this.#all(`${INSERT_RUN} RETURNING seq`, ...insertRunValues(run, finishSeq, record))
    for (const rows of tagRows(run.tags, Number(inserted.seq))) this.#storage.sql.exec(rows.text, ...rows.params)
    for (const key in run.steps) this.#storage.sql.exec(UPSERT_STEP, inserted.seq, key, JSON.stringify(run.steps[key]))
    tally.total++
    if (finishSeq === null) tally.live++
    this.#evict()
    return { run: JSON.parse(wholeText(run, record)) as RunRecord, created: true }
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
      const record = rowText(run)
      const finishSeq = this.#finishSeq(run.status, row.finished_seq)
      this.#storage.sql.exec(UPDATE_RUN, run.status, finishSeq, record, row.seq)
      const metadata = metadataChange(patch)
      if (metadata) {
        this.#storage.sql.exec(METADATA_WRITES[0], row.seq)
        this.#storage.sql.exec(METADATA_WRITES[1], row.seq, metadata.json)
      }
      if ((finishSeq === null) !== (row.finished_seq === null)) this.#counts().live += finishSeq === null ? 1 : -1
      if (finishSeq !== null && row.finished_seq === null) this.#evict()
      return JSON.parse(wholeText(run, record)) as RunRecord
    })
    if (updated) this.#onChange(updated)
    return updated
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    this.#change(runId, (run) => run.attempts.push(attempt))
  }

  /** One row of the steps table: a step costs its own size, not its run's. */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    this.#write(() => {
      const [row] = this.#all(SELECT_RUN_SEQ, runId)
      if (!row) throw new Error(`${WHERE}: unknown run "${runId}"`)
      this.#storage.sql.exec(UPSERT_STEP, row.seq, key, JSON.stringify(step))
    })
  }

  /**
   * `ctx.step.transaction`: `work` runs in the step's `transactionSync`
   * with the record, on the object's SQL storage; the handler runs in this
   * object, which runs nothing else meanwhile.
   */
  async transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    const sql = this.#storage.sql
    return this.#write(() => {
      const [row] = this.#all(SELECT_RUN_SEQ, runId)
      if (!row) throw new Error(`${WHERE}: unknown run "${runId}"`)
      const output = runSqlTransaction(appConnection(sql), key, 'a Durable Object', work)
      sql.exec(UPSERT_STEP, row.seq, key, JSON.stringify(record(output)))
      return output
    })
  }

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const list = listRunsQuery(query)
    if (!list) return []
    return this.#all(list.text, ...list.params).map((row) => JSON.parse(row.record as string) as RunRecord)
  }

  /**
   * `listRuns`, ordered by id and with the cursor read as an id, held here
   * or not: the order the tasks objects of a worker with `shards` share,
   * so the worker merges their pages with the last id of one as the cursor
   * of the next (`shard-merge.ts`).
   */
  async listRunsById(query: RunQuery = {}): Promise<RunRecord[]> {
    const list = listRunsQuery(query, 'id')
    if (!list) return []
    return this.#all(list.text, ...list.params).map((row) => JSON.parse(row.record as string) as RunRecord)
  }

  /**
   * What the events of `ids` held here did here, for a worker with
   * `shards`: the runs each started here that the store still holds, and
   * the waits it met here. An event not held here is left out.
   */
  async eventEffects(ids: readonly string[]): Promise<EventEffectsHere[]> {
    if (ids.length === 0) return []
    const rows = this.#all(`SELECT record FROM svc_events WHERE id IN (${ids.map(() => '?').join(', ')})`, ...ids)
    return Promise.all(
      rows.map(async (row) => {
        const event = JSON.parse(row.record as string) as EventRecord
        return { id: event.id, runs: await eventRuns(this, event), resumed: event.resumed ?? [] }
      }),
    )
  }

  async countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<TaskRunCount[]> {
    const count = countRunsByTaskQuery(status)
    if (!count) return []
    return this.#all(count.text, ...count.params).map((row) => ({ taskName: row.task_name as string, count: Number(row.count) }))
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    this.#storage.sql.exec(UPSERT_TIMER_WITH_DUE_AT, timer.id, timer.runId, Date.parse(timer.dueAt), JSON.stringify(timer))
    this.#onChange()
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    const [row] = this.#all(TAKE_TIMER, id)
    if (!row) return undefined
    this.#onChange()
    return JSON.parse(row.record as string) as TimerRecord
  }

  async dropTimersOf(runId: string): Promise<string[]> {
    const ids = this.#all(DROP_RUN_TIMERS, runId).map((row) => row.id as string)
    // The alarm follows the earliest timer left.
    if (ids.length > 0) this.#onChange()
    return ids
  }

  async listTimers(): Promise<TimerRecord[]> {
    return this.#all(LIST_TIMERS).map((row) => JSON.parse(row.record as string) as TimerRecord)
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    this.#storage.sql.exec(INSERT_TOKEN, token.id, token.runId, token.status, JSON.stringify(token))
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
    return this.#write(() => runProcedure(settleTokenSql(id, status, payload), this.#runner))
  }

  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    const { result } = this.#write(() => runProcedure(startQueuedSql(taskName, limits, now), this.#runner))
    for (const run of result.started) this.#onChange(run)
    return result
  }

  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const stored = this.#write(() => {
      const held = run.idempotencyKey !== undefined && this.#all(SELECT_RUN_BY_KEY, run.taskName, run.idempotencyKey).length > 0
      const join = held ? undefined : runProcedure(joinScheduledSql(run, keyPath), this.#runner)
      return join ? { run: join.joined, created: false } : this.#insertRun(run)
    })
    if (stored.created) this.#onChange(stored.run)
    return stored.run
  }

  #all(query: string, ...bindings: unknown[]): Record<string, unknown>[] {
    return this.#storage.sql.exec(query, ...bindings).toArray()
  }

  #counts(): { total: number; live: number; lastFinished: number } {
    if (this.#tally) return this.#tally
    const [counts] = this.#all(COUNT_RUNS)
    const [last] = this.#all(LAST_FINISHED_SEQ)
    this.#tally = { total: Number(counts?.total ?? 0), live: Number(counts?.live ?? 0), lastFinished: Number(last?.n ?? 0) }
    return this.#tally
  }

  /** Several statements that commit together; a throw rolls them all back. */
  #write<T>(fn: () => T): T {
    const before = this.#tally && { ...this.#tally }
    try {
      return this.#storage.transactionSync(fn)
    } catch (error) {
      // The tables are back where they were, and so are the counts.
      this.#tally = before
      throw error
    }
  }

  #row(id: string): RunRow | undefined {
    return this.#all(SELECT_RUN, id)[0] as unknown as RunRow | undefined
  }

  #token(id: string): TokenRecord | undefined {
    return runProcedure(tokenSql(id), this.#runner)
  }

  #change(runId: string, edit: (run: RunRecord) => void): void {
    this.#write(() => {
      const row = this.#row(runId)
      if (!row) throw new Error(`${WHERE}: unknown run "${runId}"`)
      const run = JSON.parse(row.record) as RunRecord
      edit(run)
      this.#storage.sql.exec(UPDATE_RUN_RECORD, rowText(run), row.seq)
    })
  }

  #finishSeq(status: RunStatus, current: number | null): number | null {
    return finishSeqOf(status, current, () => ++this.#counts().lastFinished)
  }

  async pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    return this.#write(() => {
      for (const text of PRUNE_WITH_RUNS) this.#storage.sql.exec(text, taskName, limit, before)
      const gone = this.#all(PRUNE_RUNS, taskName, limit, before).length
      this.#counts().total -= gone
      return gone
    })
  }

  /** Drops the runs that finished longest ago, and what goes with them, until the bound holds again. */
  #evict(): void {
    const tally = this.#counts()
    const excess = tally.total - this.maxRuns
    if (excess <= 0) return
    for (const text of EVICT_WITH_RUNS) this.#storage.sql.exec(text, excess)
    this.#storage.sql.exec(EVICT_RUNS, excess)
    // The oldest finished runs go, as many as there are up to the excess; live runs stay.
    tally.total -= Math.min(excess, tally.total - tally.live)
  }
}
