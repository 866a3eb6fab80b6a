/**
 * `SqliteRunStore`: a durable `RunStore` on Node's built-in `node:sqlite`.
 * With it a single Node process keeps runs, steps, timers, tokens and
 * waitpoints across a restart, and `runtime.recover()` (called by
 * `startSvcServer`) carries on from where the last process stopped.
 *
 * Writes are group-committed (`group-commit.ts`): the writes of one
 * event-loop turn share one `BEGIN IMMEDIATE` transaction and one commit,
 * and each resolves once that commit is on disk. Every compare-and-set
 * point of the `RunStore` contract (`createRun` with an idempotency key,
 * `updateRun` with `expect`, `takeTimer`, `putToken`, `settleToken`, `putEvent`) runs
 * whole inside it: `DatabaseSync` is synchronous, so no other call on the
 * same connection can run in the middle of one, and the write lock keeps
 * other processes on the same file out until the batch commits. Each write
 * is a savepoint of its own, so one that fails (its run's steps with it,
 * all of flow control's starts, all of a claim) leaves nothing behind.
 *
 * The store shows only what is durable: a read (`getRun`, `listRuns`,
 * `getToken`, `listTimers`) asked while a batch is open is answered right
 * after that batch ends, from what it committed, never from rows a
 * rollback could still take back. A file that cannot take a write (full,
 * locked past `busyTimeoutMs`, read-only, failing) makes the call reject
 * with `StoreUnavailableError`, 503 `STORE_UNAVAILABLE` (errors.ts),
 * and the store takes writes again once it can.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import {
  applyRunPatch,
  type EventRecord,
  hasSteps,
  isFinished,
  statusMatches,
  insertEach,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type StartedRuns,
  type TimerRecord,
  type TokenRecord,
} from '../runtime/tasks/store.ts'
import { LeaseLostError, StoreFullError } from '../runtime/errors.ts'
import { isThenable, runSqlTransactionBounded, type SqlConnection } from '../runtime/tasks/sql/transaction.ts'
import {
  COUNT_RUNS,
  insertRunValues,
  EVICT_RUNS,
  EVICT_STEPS,
  EVICT_TOKENS,
  INSERT_TOKEN,
  LAST_FINISHED_SEQ,
  LIST_TIMERS,
  PRUNE_RUNS,
  PRUNE_STEPS,
  PRUNE_TOKENS,
  countRunsByTaskQuery,
  listRunsQuery,
  RUN_EXISTS,
  type RunRow,
  SELECT_RUN,
  SELECT_RUN_BY_KEY,
  TAKE_TIMER,
  UPDATE_RUN_RECORD,
  UPSERT_STEP,
} from '../runtime/tasks/sql/queries.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { EventEffects, EventListQuery } from '../runtime/types/run-store.ts'
import type { FlowLimits } from '../runtime/tasks/flow.ts'
import { joinScheduledSql, startQueuedSql, type WrittenRow } from '../runtime/tasks/sql/flow.ts'
import { eventsSinceSql, listEventsSql, noteEventEffectsSql, putEventSql } from '../runtime/tasks/sql/events.ts'
import { runProcedure, type SqlRunner } from '../runtime/tasks/sql/procedure.ts'
import { settleTokenSql, tokenSql } from '../runtime/tasks/sql/tokens.ts'
import { openDatabase } from './database.ts'
import { HELD, UPDATE_RUN_FENCED, UPDATE_RUN_RECORD_FENCED, UPSERT_STEP_FENCED } from './fences.ts'
import { ATTEMPT_TIMERS, expectsRunning } from '../runtime/tasks/fenced-writes.ts'
import { storeError } from './errors.ts'
import { GroupCommit } from './group-commit.ts'
import { type CachedRun, RowCache } from './row-cache.ts'
import { jsonCopy } from '../runtime/tasks/json-copy.ts'
import { rowText, wholeText } from '../runtime/tasks/sql/record-text.ts'
import { resolveSqliteOptions, type SqliteRunStoreOptions } from './options.ts'
import { LEASE_ON_CREATE, PROVISIONAL_LEASE, UPSERT_TIMER_DUE } from './leases.ts'
import { SqliteSharedWork } from './shared-work.ts'
import { INSERT_RUN_OWNED, SET_OWNER, UPDATE_RUN_CANCELLED, UPDATE_RUN_CLAIMED, UPDATE_RUN_OWNED } from './owners.ts'
import { Membership } from './membership.ts'
import type { EventMatch } from '../runtime/events/match.ts'

export type { SqliteRunStoreOptions } from './options.ts'

const WHERE = 'SqliteRunStore'
// https://www.sqlite.org/rescode.html#constraint_unique
const SQLITE_CONSTRAINT_UNIQUE = 2067
// The bound of the row cache, in characters of record text (see the class doc).
const ROW_CACHE_WEIGHT = 64 * 1024 * 1024

/**
 * Row counts, read at the first need and kept up to date by this
 * connection's writes, for as long as no other connection writes (the
 * row cache's check): a count is a scan of the table.
 */
interface Counts {
  total: number
  live: number
  /** The highest eviction position given so far, read at its first need. */
  lastFinished?: number
}

/**
 * A durable run store in one SQLite file, for `startSvcServer({ store })` or
 * `createTaskRuntime({ store })`:
 *
 * ```ts
 * const store = new SqliteRunStore({ path: './data/runs.db' })
 * const server = await startSvcServer({ apiRoutes, pages, store })
 * // on shutdown, after the server: await server.close(); store.close()
 * ```
 *
 * Run inputs, results and step outputs are stored as JSON, so they come
 * back as JSON would (a `Date` as its ISO string).
 *
 * Memory: the store keeps the runs it wrote or read in a cache
 * (`row-cache.ts`), so that the runner's writes and reads of a run
 * cost no query and no parse: live runs as parsed records, finished ones as
 * their JSON text. The cache holds at most 64 Mi characters of record text
 * (a parsed record counts three times its text), about 64 MB of heap for
 * Latin-1 text and twice that for text outside it. A run with a small
 * input and result is some 350 characters and takes about 500 bytes
 * cached, so at the default `maxRuns` of 10,000 the whole store is cached
 * in about 5 MB, and a store of 100,000 such runs in about 50 MB; past the
 * bound, the runs cached first are read from the file again. SQLite's own
 * page cache may hold up to 32 MiB of the file's pages (its default is
 * 2 MiB), for the index pages that eviction and inserts walk.
 *
 * Several processes may share one file. Each transition still happens
 * once, and a process that starts (`recover()`) runs again only the
 * attempts whose process is gone, not those another live process has in
 * flight (`claimRunning`, owners.ts). By default a process only
 * fires the timers it armed or found when it started, and the attempts of
 * a process that dies are taken over at the next start of a process. With
 * `shared: true` the processes split the work as on Postgres (`shared`,
 * shared-work.ts): the live ones claim due timers, cron ticks and
 * the attempts of one that died, once its lease lapses. Runs are fenced (fences.ts): a process
 * that froze past its heartbeat and whose attempt was taken over writes
 * nothing more for that run once it goes on. One store serves one task
 * runtime: the runs it holds are that runtime's attempts.
 *
 * What it answers is durable: a read asked while writes wait for their
 * commit is answered once they are committed, and a write that fails leaves
 * nothing behind. While the file cannot take writes (a full disk, a lock
 * held past `busyTimeoutMs`, a read-only file, a failing disk), calls reject
 * with `StoreUnavailableError` (503 `STORE_UNAVAILABLE`) naming the cause;
 * what was committed stays, and the store works again once the cause is gone.
 *
 * Note: Node 22, 23 and earlier 24.x releases print "ExperimentalWarning:
 * SQLite is an experimental feature" the first time a store is created. The
 * store leaves the process's warning handling alone.
 */
export class SqliteRunStore implements RunStore {
  /** Records live in a file and survive a restart (`recover()` re-arms waits). */
  readonly durable = true
  /** The writes of an attempt check that this store still holds its run (fences.ts). */
  readonly fences = true
  readonly path: string
  readonly maxRuns: number
  /** With `shared: true`: how the processes on the file split the work. */
  readonly shared?: SqliteSharedWork
  #db: DatabaseSync | undefined
  #statements = new Map<string, StatementSync>()
  #batch: GroupCommit
  #counts: Counts | undefined
  #rows: RowCache
  /** Set while the cache is known fresh for this turn: the local commit count it was checked at. */
  #rowsChecked: number | undefined
  /**
   * The batch took the store past `maxRuns`: the runs that finished longest
   * ago are evicted once, right before its COMMIT, in one statement for the
   * whole batch rather than one per write. Other processes only ever see
   * the bound hold (they read committed state).
   */
  #evictAtCommit = false
  /** This store among the stores on the file (membership.ts). */
  readonly #membership: Membership
  /** This store's id in the file's `owners` table: the holder of the runs that enter `running` through it. */
  readonly #owner: number
  readonly #busyTimeoutMs: number
  readonly #transactionTimeoutMs: number
  /** With `shared`: how long the lease a run gets when it is made running lasts, before anyone's dispatch takes it. */
  #leaseMs: number | undefined
  /**
   * The runs this store holds, by id, with the `owner_fence` its claim set
   * (fences.ts): from when a write makes the run running here to
   * when one writes it out of `running`; with `shared`, from when its
   * engine takes the run's lease to when it gives it up (as on Postgres,
   * the attempt's writes after suspending are fenced too). A fence another
   * process moved on stays until then: every later write of the attempt
   * fails as the first.
   */
  readonly #fences = new Map<string, number>()

  constructor(options: SqliteRunStoreOptions) {
    const { path, maxRuns, busyTimeoutMs, shared, leaseMs, pollMs, transactionTimeoutMs } = resolveSqliteOptions(options, WHERE)
    this.path = path
    this.maxRuns = maxRuns
    this.#busyTimeoutMs = busyTimeoutMs
    this.#transactionTimeoutMs = transactionTimeoutMs
    this.#db = openDatabase(path, busyTimeoutMs, WHERE)
    this.#rows = new RowCache(ROW_CACHE_WEIGHT)
    this.#batch = new GroupCommit(this.#db, path, {
      error: (error) => this.#error(error),
      begin: () => this.#checkRows(),
      commit: () => {
        // With `shared`: the run changes published since the last batch go out with this one (changes.ts).
        this.shared?.beforeCommit()
        if (!this.#evictAtCommit) return
        this.#evictAtCommit = false
        this.#evict()
      },
      end: (ok) => {
        this.shared?.batchEnded(ok)
        if (ok) return
        // Rolled back: the cached rows and the counts may hold its writes.
        this.#evictAtCommit = false
        this.#counts = undefined
        this.#rows.clear()
      },
    })
    const db = this.#db
    try {
      this.#membership = new Membership({ where: WHERE, path, db, sql: (text) => this.#sql(text), write: (fn) => this.#write(fn) }, shared)
    } catch (error) {
      this.#db = undefined
      this.#statements.clear()
      db.close()
      throw this.#error(error)
    }
    this.#owner = this.#membership.self.owner
    if (shared) {
      this.#leaseMs = leaseMs
      this.shared = new SqliteSharedWork(
        {
          write: (fn) => this.#write(fn),
          read: (fn) => this.#batch.read(fn),
          sql: (text) => this.#sql(text),
          owner: this.#owner,
          fences: this.#fences,
          run: (id) => {
            const row = this.#row(id)
            return row && jsonCopy(this.#parsed(id, row))
          },
        },
        { leaseMs, pollMs },
      )
    }
  }

  /** The owner a write of `run` records: this store for a run written running (owners.ts). */
  #ownerOf(run: RunRecord): number | null {
    return run.status === 'running' ? this.#owner : null
  }

  /**
   * Of these running runs, the ones no live process holds, taken for this
   * store: `recover()` runs their attempts again (membership.ts).
   */
  async claimRunning(runIds: readonly string[]): Promise<{ claimed: string[]; recheckInMs?: number }> {
    if (runIds.length === 0) return { claimed: [] }
    return this.#write(() => {
      const { claimed, fences, recheckInMs } = this.#membership.claimRunning(runIds)
      // Last: a statement that throws above undoes the claims, which then hold nothing here.
      for (let i = 0; i < claimed.length; i++) this.#fences.set(claimed[i], fences[i])
      return { claimed, recheckInMs }
    })
  }

  /** Number of runs retained, committed: a batch still open is committed first. */
  get size(): number {
    this.#batch.flush()
    try {
      return Number((this.#sql(COUNT_RUNS).get() as unknown as Counts).total)
    } catch (error) {
      throw this.#error(error)
    }
  }

  /**
   * Commits the writes still waiting for their batch, then closes the
   * database. Later calls on the store throw. Idempotent.
   */
  close(): void {
    const db = this.#db
    if (!db) return
    this.shared?.stop()
    this.#batch.flush()
    this.#membership.leave()
    this.#db = undefined
    this.#statements.clear()
    this.#fences.clear()
    db.close()
  }

  // Not async, nor updateRun: every run calls both, and neither throws before its write's promise.
  createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord> {
    // One INSERT, unless it also writes steps or a lease.
    const oneChange = !hasSteps(run) && (this.#leaseMs === undefined || run.status !== 'running')
    return this.#write(() => this.#insertRun(run, leaseOwner), oneChange)
  }

  /** Every run in one write (one savepoint, one commit): a run past the bound is a `StoreFullError` in its place. */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    return this.#write(() => insertEach(runs, (run) => this.#insertRun(run)))
  }

  /** `createRun` inside a write; `leaseOwner` as `createRun` takes it, on a shared file. */
  #insertRun(run: RunRecord, leaseOwner?: string): RunRecord {
    // A child of an attempt's run: started only while the attempt holds it.
    if (run.parentRunId !== undefined) this.#checkHeld(run.parentRunId)
    const record = rowText(run)
    // The record as the file holds it: the store's own, and the copy returned.
    const stored = jsonCopy(run)
    const exists = () => new Error(`${WHERE}: run "${run.id}" already exists`)
    if (run.idempotencyKey !== undefined) {
      const holder = this.#sql(SELECT_RUN_BY_KEY).get(run.taskName, run.idempotencyKey) as { record: string } | undefined
      if (holder) {
        const held = JSON.parse(holder.record) as RunRecord
        if (held.id === run.id) throw exists()
        return held
      }
    }
    // Counted inside the write lock, so processes sharing the file cannot
    // both take the last place. Live runs are never evicted.
    const counts = this.#countsNow()
    const live = !isFinished(run.status)
    if (live && counts.live >= this.maxRuns) throw new StoreFullError(WHERE, this.maxRuns)
    const finishSeq = this.#finishSeq(run.status, null)
    const owner = this.#ownerOf(run)
    let inserted: { lastInsertRowid: number | bigint }
    try {
      inserted = this.#sql(INSERT_RUN_OWNED).run(...insertRunValues(run, finishSeq, record), owner, owner === null ? 0 : 1)
    } catch (error) {
      // The id's UNIQUE constraint is the existence check: one statement, not a lookup before it.
      if ((error as { errcode?: number }).errcode === SQLITE_CONSTRAINT_UNIQUE && this.#sql(RUN_EXISTS).get(run.id)) {
        throw exists()
      }
      throw error
    }
    const seq = Number(inserted.lastInsertRowid)
    for (const key in stored.steps) this.#sql(UPSERT_STEP).run(seq, key, JSON.stringify(stored.steps[key]))
    if (owner !== null) this.#madeRunning(run.id, seq, 1, leaseOwner)
    this.#cache(run.id, seq, finishSeq, live ? stored : undefined, live ? record : wholeText(stored, record))
    counts.total++
    if (live) counts.live++
    if (counts.total > this.maxRuns) this.#evictAtCommit = true
    return live ? jsonCopy(stored) : stored
  }

  /**
   * The row write of `updateRun`, and what it does to the fences: a run
   * made running here is held here under its next fence; a cancel moves
   * the fence on; an attempt's end (`fence`) lands only while the run is
   * still held under it. A run written out of running is no longer held.
   */
  #writeRun(
    id: string,
    seq: number,
    was: RunStatus,
    status: RunStatus,
    finishSeq: number | null,
    record: string,
    fence: number | undefined,
  ): void {
    const owner = this.#owner
    if (status === 'running' && was !== 'running') {
      const claimed = this.#sql(UPDATE_RUN_CLAIMED).get(status, finishSeq, record, owner, seq) as { owner_fence: number }
      this.#madeRunning(id, seq, claimed.owner_fence)
      return
    }
    if (status === 'cancelled' && was !== 'cancelled') {
      if (fence !== undefined) this.#checkHeld(id)
      this.#sql(UPDATE_RUN_CANCELLED).run(status, finishSeq, record, seq)
    } else if (fence === undefined) {
      this.#sql(UPDATE_RUN_OWNED).run(status, finishSeq, record, status === 'running' ? owner : null, seq)
    } else if (this.#sql(UPDATE_RUN_FENCED).run(status, finishSeq, record, seq, owner, fence).changes === 0) {
      throw new LeaseLostError(id)
    }
    if (status !== 'running' && !this.shared) this.#fences.delete(id)
  }

  /**
   * A run made running here (created, resumed, started by flow control),
   * under `fence`: this store holds it; with `shared`, it gets a lease
   * nobody holds, which a dispatch then takes (`acquireLease`), as on
   * Postgres, and only that lease fences the attempt's writes; or, for a
   * run triggered by engine `leaseOwner` (`leasesOnCreate`), a lease that
   * engine holds, under `fence`.
   */
  #madeRunning(id: string, seq: number, fence: number, leaseOwner?: string): void {
    if (this.#leaseMs === undefined) this.#fences.set(id, fence)
    else if (leaseOwner === undefined) this.#sql(PROVISIONAL_LEASE).run(Date.now() + this.#leaseMs, seq)
    else {
      this.#sql(LEASE_ON_CREATE).run(leaseOwner, Date.now() + this.#leaseMs, seq)
      this.#fences.set(id, fence)
    }
  }

  /** Throws `LeaseLostError` unless this store still holds run `runId` under the fence it keeps; a run not held here passes. */
  #checkHeld(runId: string): void {
    const fence = this.#fences.get(runId)
    if (fence !== undefined && this.#sql(HELD).get(runId, this.#owner, fence) === undefined) throw new LeaseLostError(runId)
  }

  getRun(id: string): Promise<RunRecord | undefined> {
    return this.#batch.read(() => {
      const row = this.#row(id)
      if (!row) return undefined
      return row.run ? jsonCopy(row.run) : (JSON.parse(row.text!) as RunRecord)
    })
  }

  updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const updated = this.#updateRun(id, patch, expect)
    const shared = this.shared
    if (!shared || patch.status !== 'cancelled') return updated
    // The process running a cancelled run's attempt learns of it when it
    // renews its lease (which then fails); waking the processes has them
    // renew now rather than within leaseMs / 3.
    return updated.then(async (run) => {
      if (run?.status === 'cancelled') await shared.wake()
      return run
    })
  }

  #updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    // One UPDATE (#writeRun), and a lease when shared.
    return this.#write(() => {
      // An attempt's end is fenced; a cancel or a resume is not.
      const fence = expectsRunning(expect) ? this.#fences.get(id) : undefined
      const row = this.#row(id)
      if (!row) {
        if (fence !== undefined) throw new LeaseLostError(id)
        return undefined
      }
      const run = this.#parsed(id, row)
      // The check and the write share one transaction: the compare-and-set.
      if (expect && !statusMatches(run.status, expect.status)) {
        // Held here, the run is running: only another process (a cancel,
        // which moves the fence on) ends it outside its attempt.
        if (fence !== undefined) throw new LeaseLostError(id)
        return undefined
      }
      const was = run.status
      // Each value as JSON keeps it; undefined stays, to remove its field.
      const copied: Record<string, unknown> = {}
      for (const key in patch) copied[key] = jsonCopy((patch as Record<string, unknown>)[key])
      applyRunPatch(run, copied as RunPatch)
      const record = rowText(run)
      const finishSeq = this.#finishSeq(run.status, row.finished_seq)
      this.#writeRun(id, row.seq, was, run.status, finishSeq, record, fence)
      this.#cache(id, row.seq, finishSeq, finishSeq === null ? run : undefined, finishSeq === null ? record : wholeText(run, record))
      if ((finishSeq === null) !== (row.finished_seq === null) && this.#counts) this.#counts.live += finishSeq === null ? 1 : -1
      if (finishSeq !== null && row.finished_seq === null && this.#countsNow().total > this.maxRuns) this.#evictAtCommit = true
      // A finished run is cached as its text: the record is nobody else's.
      return finishSeq === null ? jsonCopy(run) : run
    }, this.#leaseMs === undefined)
  }

  /** Appends an attempt to the run's record; fenced while the store holds the run (an attempt's own). */
  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    return this.#write(() => {
      const fence = this.#fences.get(runId)
      const row = this.#row(runId)
      if (!row) throw this.#unknownRun(runId, fence)
      const run = this.#parsed(runId, row)
      run.attempts.push(jsonCopy(attempt))
      const record = rowText(run)
      if (fence === undefined) this.#sql(UPDATE_RUN_RECORD).run(record, row.seq)
      else if (this.#sql(UPDATE_RUN_RECORD_FENCED).run(record, row.seq, this.#owner, fence).changes === 0) throw new LeaseLostError(runId)
      const live = row.finished_seq === null
      this.#cache(runId, row.seq, row.finished_seq, live ? run : undefined, live ? record : wholeText(run, record))
    }, true)
  }

  /**
   * One row of the steps table: a step costs its own size, not its run's.
   * Fenced while the store holds the run, but for the step a suspended run
   * waits on: whoever met the wait records it.
   */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const text = JSON.stringify(step)
    return this.#write(() => this.#putStep(runId, key, text, true), true)
  }

  /**
   * `ctx.step.transaction`: `work` runs on the store's connection, in a
   * savepoint of the open batch, and its step is recorded in the same
   * savepoint. A `work` that awaits keeps the batch open, and the store's
   * other writes wait for it (`GroupCommit.writeAcross`), up to
   * `transactionTimeoutMs`.
   */
  async transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    if (!this.#db) throw new Error(`${WHERE}: the store for ${this.path} is closed`)
    const save = (output: T): T => {
      this.#putStep(runId, key, JSON.stringify(record(output)), false)
      return output
    }
    return this.#batch.writeAcross(() => {
      this.#checkHeld(runId)
      const output = runSqlTransactionBounded(this.#appConnection(), key, work, this.#transactionTimeoutMs)
      return isThenable(output) ? (output as Promise<T>).then(save) : save(output)
    })
  }

  /** Statements of the app's own, on the store's connection: prepared each time, since their text is the app's. */
  #appConnection(): SqlConnection {
    const db = this.#db
    if (!db) throw new Error(`${WHERE}: the store for ${this.path} is closed`)
    return {
      query: (text, params) => db.prepare(text).all(...params) as Record<string, unknown>[],
      run: (text, params) => Number(db.prepare(text).run(...params).changes),
    }
  }

  /** Writes step `key` of run `runId` (`fenced`: under the fence this store holds it with) and keeps the cache in step. */
  #putStep(runId: string, key: string, text: string, fenced: boolean): void {
    const fence = fenced ? this.#fences.get(runId) : undefined
    const row = this.#row(runId)
    if (!row) throw this.#unknownRun(runId, fence)
    if (fence === undefined) this.#sql(UPSERT_STEP).run(row.seq, key, text)
    else if (this.#sql(UPSERT_STEP_FENCED).run(key, text, row.seq, this.#owner, fence, key).changes === 0) {
      throw new LeaseLostError(runId)
    }
    // The cached record follows: a live run's parsed record takes the step,
    // a finished run's text is read again when next asked for.
    if (row.finished_seq !== null) return void this.#rows.delete(runId)
    const run = this.#parsed(runId, row)
    run.steps[key] = JSON.parse(text) as StepRecord
    this.#rows.grow(runId, text.length)
  }

  listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return this.#batch.read(() => {
      const list = listRunsQuery(query)
      if (!list) return []
      const rows = this.#sql(list.text).all(...list.params) as unknown as { record: string }[]
      return rows.map((row) => JSON.parse(row.record) as RunRecord)
    })
  }

  countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<{ taskName: string; count: number }[]> {
    return this.#batch.read(() => {
      const count = countRunsByTaskQuery(status)
      if (!count) return []
      const rows = this.#sql(count.text).all(...count.params) as unknown as { task_name: string; count: number }[]
      return rows.map((row) => ({ taskName: row.task_name, count: Number(row.count) }))
    })
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    const record = JSON.stringify(timer)
    return this.#write(() => {
      if (ATTEMPT_TIMERS.has(timer.kind)) this.#checkHeld(timer.runId)
      this.#sql(UPSERT_TIMER_DUE).run(timer.id, timer.runId, timer.dueAt, record)
    }, true)
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    return this.#write(() => {
      // `all()` runs the claiming statement to completion.
      const [row] = this.#sql(TAKE_TIMER).all(id) as unknown as { record: string }[]
      return row && (JSON.parse(row.record) as TimerRecord)
    })
  }

  listTimers(): Promise<TimerRecord[]> {
    return this.#batch.read(() => {
      const rows = this.#sql(LIST_TIMERS).all() as unknown as { record: string }[]
      return rows.map((row) => JSON.parse(row.record) as TimerRecord)
    })
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    const record = JSON.stringify(token)
    return this.#write(() => {
      this.#checkHeld(token.runId)
      this.#sql(INSERT_TOKEN).run(token.id, token.runId, token.status, record)
      return this.#token(token.id)!
    })
  }

  getToken(id: string): Promise<TokenRecord | undefined> {
    return this.#batch.read(() => this.#token(id))
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    return this.#write(() => runProcedure(settleTokenSql(id, status, payload), this.#runner))
  }

  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    // Reads and writes share the batch's write lock: no other process can start a run in between.
    return this.#write(() => {
      const { result, written } = runProcedure(startQueuedSql(taskName, limits, now), this.#runner)
      const fences: number[] = []
      for (const row of written) {
        // Started here: this store holds them (owners.ts).
        fences.push((this.#sql(SET_OWNER).get(this.#owner, row.row.seq) as { owner_fence: number }).owner_fence)
        this.#cacheWritten(row)
      }
      // Last: a statement that throws above undoes the claims, which then hold nothing here.
      for (let i = 0; i < written.length; i++) this.#madeRunning(written[i].id, Number(written[i].row.seq), fences[i])
      return result
    })
  }

  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    return this.#write(() => {
      // A join, like an insert, is a child's start: only while its parent's attempt holds the parent.
      if (run.parentRunId !== undefined) this.#checkHeld(run.parentRunId)
      const held = run.idempotencyKey !== undefined && this.#sql(SELECT_RUN_BY_KEY).get(run.taskName, run.idempotencyKey)
      const join = held ? undefined : runProcedure(joinScheduledSql(run, keyPath), this.#runner)
      if (!join) return this.#insertRun(run)
      this.#cacheWritten(join.written)
      return join.joined
    })
  }

  /**
   * Inside the batch's write lock, so of stores racing with one id on the
   * file, whatever their process, the first to take the lock records it.
   */
  async putEvent(event: EventRecord): Promise<{ event: EventRecord; created: boolean }> {
    return this.#write(() => runProcedure(putEventSql(event, Date.now()), this.#runner))
  }

  eventsSince(name: string, since: string, limit: number, match?: EventMatch): Promise<EventRecord[]> {
    return this.#batch.read(() => runProcedure(eventsSinceSql(name, since, limit, match), this.#runner))
  }

  listEvents(query: EventListQuery): Promise<{ events: EventRecord[]; cursor?: string }> {
    return this.#batch.read(() => runProcedure(listEventsSql(query, `${WHERE}.listEvents`), this.#runner))
  }

  /** Inside the batch's write lock: the read of the event and its write are one step for every process on the file. */
  async noteEventEffects(id: string, effects: EventEffects): Promise<void> {
    return this.#write(() => runProcedure(noteEventEffectsSql(id, effects), this.#runner))
  }

  /** The statements of this connection, for the SQL shared with the Durable Object store. */
  readonly #runner: SqlRunner = {
    all: (query, params) => this.#sql(query).all(...params) as Record<string, unknown>[],
    run: (query, params) => {
      this.#sql(query).run(...params)
    },
  }

  #sql(text: string): StatementSync {
    const db = this.#db
    if (!db) throw new Error(`${WHERE}: the store for ${this.path} is closed`)
    let statement = this.#statements.get(text)
    if (!statement) {
      statement = db.prepare(text)
      this.#statements.set(text, statement)
    }
    return statement
  }

  /**
   * Runs `fn` in the current batch's `BEGIN IMMEDIATE` transaction, so a
   * read inside `fn` cannot be overtaken by another process's write before
   * `fn` writes back; resolves once the batch has committed. `fn` is one
   * savepoint: when it throws, every statement it ran is undone, and so are
   * the counts it touched. `oneChange`: `fn` changes the file by one
   * statement at most and throws only before it or by it
   * (`GroupCommit.write`).
   */
  #write<T>(fn: () => T, oneChange = false): Promise<T> {
    if (!this.#db) return Promise.reject(new Error(`${WHERE}: the store for ${this.path} is closed`))
    return this.#batch.write(() => {
      // The counts as they were, field by field: a copy of the object would cost every write an allocation.
      const counts = this.#counts
      const total = counts?.total
      const live = counts?.live
      const lastFinished = counts?.lastFinished
      try {
        return fn()
      } catch (error) {
        // Its changes are rolled back: what it counted or cached is in doubt.
        this.#counts = counts && { total: total!, live: live!, lastFinished }
        this.#rows.clear()
        throw error
      }
    }, oneChange)
  }

  /** What a call rejects with for `error`: `StoreUnavailableError` for a file that cannot be used now. */
  #error(error: unknown): unknown {
    return storeError(error, WHERE, this.#busyTimeoutMs)
  }

  /** The row counts, read at the first need since another connection wrote. */
  #countsNow(): Counts {
    this.#counts ??= this.#sql(COUNT_RUNS).get() as unknown as Counts
    return this.#counts
  }

  #row(id: string): CachedRun | undefined {
    // Inside a batch the cache was checked when it took the write lock, and
    // nobody else can write. Outside one (a read, which runs only while no
    // batch is open), once per event-loop turn, and again whenever another
    // connection in this process has committed: a read sees what other
    // processes had committed when the turn began.
    if (!this.#batch.open && (this.#rowsChecked === undefined || this.#rowsChecked !== this.#batch.localCommits)) {
      this.#checkRows()
      this.#rowsChecked = this.#batch.localCommits
      setImmediate(() => {
        this.#rowsChecked = undefined
      })
    }
    const cached = this.#rows.get(id)
    if (cached) return cached
    const row = this.#sql(SELECT_RUN).get(id) as RunRow | undefined
    return row && this.#cacheWritten({ id, row })
  }

  /** The store's own record of a cached row, parsed at the first write that needs it. */
  #parsed(id: string, row: CachedRun): RunRecord {
    if (row.run) return row.run
    const text = row.text!
    const run = JSON.parse(text) as RunRecord
    this.#cache(id, row.seq, row.finished_seq, run, text)
    return run
  }

  /** Caches a row just written or read: `run` (the store's own record) while the run is live, else its text. */
  #cache(id: string, seq: number, finishSeq: number | null, run: RunRecord | undefined, text: string): CachedRun {
    // Both shapes carry every field, so the cache's rows share one hidden class.
    const row: CachedRun = run
      ? { seq, finished_seq: finishSeq, run, text: undefined, weight: 0 }
      : { seq, finished_seq: finishSeq, run: undefined, text, weight: 0 }
    this.#rows.set(id, row, text.length)
    return row
  }

  #cacheWritten({ id, row }: WrittenRow): CachedRun {
    return this.#cache(id, Number(row.seq), row.finished_seq, undefined, row.record)
  }

  /** Empties the row cache, and forgets the counts, when another connection has committed since they were read. */
  #checkRows(): void {
    if (!this.#rows.check(Number((this.#sql('PRAGMA data_version').get() as { data_version: number }).data_version)))
      this.#counts = undefined
  }

  #token(id: string): TokenRecord | undefined {
    return runProcedure(tokenSql(id), this.#runner)
  }

  /** What a write of a run the file no longer holds throws: gone while held here, it was taken over, finished and evicted. */
  #unknownRun(runId: string, fence: number | undefined): Error {
    return fence === undefined ? new Error(`${WHERE}: unknown run "${runId}"`) : new LeaseLostError(runId)
  }

  /**
   * The eviction position of a run in `status`: kept while it stays
   * finished, the next one when it has just finished, none while it is live.
   */
  #finishSeq(status: RunStatus, current: number | null): number | null {
    if (!isFinished(status)) return null
    if (current !== null) return current
    const counts = this.#countsNow()
    if (counts.lastFinished === undefined) {
      const row = this.#sql(LAST_FINISHED_SEQ).get() as { n: number | null }
      counts.lastFinished = row.n ?? 0
    }
    return ++counts.lastFinished
  }

  async pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    return this.#write(() => {
      this.#sql(PRUNE_TOKENS).run(taskName, limit, before)
      this.#sql(PRUNE_STEPS).run(taskName, limit, before)
      return this.#forget(this.#sql(PRUNE_RUNS).all(taskName, limit, before) as unknown as { id: string }[])
    })
  }

  /** Drops the runs that finished longest ago, and their tokens, until the bound holds again. */
  #evict(): void {
    const excess = this.#countsNow().total - this.maxRuns
    if (excess <= 0) return
    this.#sql(EVICT_TOKENS).run(excess)
    this.#sql(EVICT_STEPS).run(excess)
    // RETURNING names the evicted runs, to drop them from the cache.
    this.#forget(this.#sql(`${EVICT_RUNS} RETURNING id`).all(excess) as unknown as { id: string }[])
  }

  /** What this store holds of runs just deleted goes too; resolves to how many they were. */
  #forget(gone: readonly { id: string }[]): number {
    for (const { id } of gone) {
      this.#rows.delete(id)
      // Finished by another process after this one lost it: nothing more to fence.
      this.#fences.delete(id)
    }
    this.#countsNow().total -= gone.length
    return gone.length
  }
}
