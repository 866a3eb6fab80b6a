/**
 * `SqliteRunStore`: a durable `RunStore` on Node's built-in `node:sqlite`.
 * Its writes are group-committed (`group-commit.ts`): the writes of one
 * event-loop turn share one `BEGIN IMMEDIATE` transaction and one commit,
 * each a savepoint of its own, and each resolves once that commit is on
 * disk. Every compare-and-set of the `RunStore` contract runs whole inside
 * it: `DatabaseSync` is synchronous, and the write lock keeps other
 * processes out until the batch commits. What the store keeps of the file
 * (rows cached, counts, fences) is in `connection.ts`; the writes of a
 * run's row and steps in `run-writes.ts`.
 */
import {
  hasSteps,
  insertEach,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type StartedRuns,
  type TimerRecord,
  type TokenRecord,
} from '../runtime/tasks/store/store.ts'
import type { StoreFullError } from '../runtime/errors.ts'
import { isThenable, runSqlTransactionBounded, type SqlConnection } from '../runtime/tasks/sql/transaction.ts'
import {
  ANY_EVENT_WAIT,
  COUNT_RUNS,
  DROP_RUN_TIMERS,
  INSERT_TOKEN,
  LIST_TIMERS,
  PRUNE_RUNS,
  PRUNE_WITH_RUNS,
  countRunsByTaskQuery,
  listRunsQuery,
  SELECT_RUN_BY_KEY,
  TAKE_TIMER,
} from '../runtime/tasks/sql/queries.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { StoreLifecycle } from '../runtime/types/run-store.ts'
import type { FlowLimits } from '../runtime/tasks/flow/flow.ts'
import { joinScheduledSql, startQueuedSql } from '../runtime/tasks/sql/flow.ts'
import { type KitCalls, kitCalls } from '../runtime/tasks/sql/kit-calls.ts'
import { runProcedure } from '../runtime/tasks/sql/procedure.ts'
import { settleTokenSql } from '../runtime/tasks/sql/tokens.ts'
import { ATTEMPT_TIMERS } from '../runtime/tasks/engine/fenced-writes.ts'
import { jsonCopy } from '../runtime/tasks/base/json-copy.ts'
import { type Counts, SqliteConnection, WHERE } from './connection.ts'
import { openDatabase } from './database.ts'
import { UPSERT_TIMER_DUE } from './leases.ts'
import { Membership } from './membership.ts'
import { resolveSqliteOptions, type SqliteRunStoreOptions } from './options.ts'
import { SET_OWNER } from './owners.ts'
import { appendAttemptRow, insertRun, madeRunning, putStep, updateRunRow } from './run-writes.ts'
import { SqliteSharedWork } from './shared-work.ts'

export type { SqliteRunStoreOptions } from './options.ts'

/** Events, runtime schedules and signals: the SQL kit's calls (kit-calls.ts), set by the constructor. */
export interface SqliteRunStore extends KitCalls {}

/**
 * A durable run store in one SQLite file, for `startSvcServer({ store })` or
 * `createTaskRuntime({ store })`:
 *
 * ```ts
 * const store = new SqliteRunStore({ path: './data/runs.db' })
 * const server = await startSvcServer({ apiRoutes, pages, store })
 * // on shutdown, after the server: await server.close(); await store.close()
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
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor sets every member the interface above declares
export class SqliteRunStore implements RunStore, StoreLifecycle {
  /** Records live in a file and survive a restart (`recover()` re-arms waits). */
  readonly durable = true
  /** The writes of an attempt check that this store still holds its run (fences.ts). */
  readonly fences = true
  readonly path: string
  readonly maxRuns: number
  /** With `shared: true`: how the processes on the file split the work. */
  readonly shared?: SqliteSharedWork
  /** The file as this store keeps it: connection, batches, cached rows, counts, fences (connection.ts). */
  readonly #conn: SqliteConnection
  /** This store among the stores on the file (membership.ts). */
  readonly #membership: Membership
  readonly #transactionTimeoutMs: number

  constructor(options: SqliteRunStoreOptions) {
    const { path, maxRuns, busyTimeoutMs, shared, leaseMs, pollMs, transactionTimeoutMs } = resolveSqliteOptions(options, WHERE)
    this.path = path
    this.maxRuns = maxRuns
    this.#transactionTimeoutMs = transactionTimeoutMs
    const db = openDatabase(path, busyTimeoutMs, WHERE)
    const conn = new SqliteConnection(db, path, maxRuns, busyTimeoutMs)
    this.#conn = conn
    try {
      this.#membership = new Membership({ where: WHERE, path, db, sql: (text) => conn.sql(text), write: (fn) => conn.write(fn) }, shared)
    } catch (error) {
      conn.close()
      throw conn.error(error)
    }
    conn.owner = this.#membership.self.owner
    // Inside the batch's write lock: of stores racing on the file, whatever their process, the first to take it writes.
    Object.assign(
      this,
      kitCalls(
        {
          write: (p, oneChange) => conn.write(() => runProcedure(p, conn.runner), oneChange),
          read: (p) => conn.read(() => runProcedure(p, conn.runner)),
        },
        WHERE,
      ),
    )
    if (shared) {
      conn.leaseMs = leaseMs
      this.shared = new SqliteSharedWork(
        {
          write: (fn) => conn.write(fn),
          read: (fn) => conn.read(fn),
          sql: (text) => conn.sql(text),
          owner: conn.owner,
          fences: conn.fences,
          run: (id) => {
            const row = conn.row(id)
            return row && jsonCopy(conn.parsed(id, row))
          },
        },
        { leaseMs, pollMs },
      )
      // The run changes published since the last batch go out with the next (changes.ts).
      conn.listener = this.shared
    }
  }

  /**
   * Of these running runs, the ones no live process holds, taken for this
   * store: `recover()` runs their attempts again (membership.ts).
   */
  async claimRunning(runIds: readonly string[]): Promise<{ claimed: string[]; recheckInMs?: number }> {
    if (runIds.length === 0) return { claimed: [] }
    return this.#conn.write(() => {
      const { claimed, fences, recheckInMs } = this.#membership.claimRunning(runIds)
      // Last: a statement that throws above undoes the claims, which then hold nothing here.
      for (let i = 0; i < claimed.length; i++) this.#conn.fences.set(claimed[i], fences[i])
      return { claimed, recheckInMs }
    })
  }

  /** How many runs the file holds, committed: a batch still open is committed first. */
  async size(): Promise<number> {
    this.#conn.batch.flush()
    try {
      return Number((this.#conn.sql(COUNT_RUNS).get() as unknown as Counts).total)
    } catch (error) {
      throw this.#conn.error(error)
    }
  }

  /**
   * Commits the writes still waiting for their batch, then closes the
   * database, before it returns: a caller that does not wait may open the
   * file again at once. Later calls on the store throw. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#conn.open) return
    this.shared?.stop()
    this.#conn.batch.flush()
    this.#membership.leave()
    this.#conn.close()
  }

  // Not async, nor updateRun: every run calls both, and neither throws before its write's promise.
  createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord> {
    // One INSERT, unless it also writes steps or a lease (tag rows come at the batch's commit).
    const oneChange = !hasSteps(run) && (this.#conn.leaseMs === undefined || run.status !== 'running')
    return this.#conn.write(() => insertRun(this.#conn, run, leaseOwner), oneChange)
  }

  /** Every run in one write (one savepoint, one commit): a run past the bound is a `StoreFullError` in its place. */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    return this.#conn.write(() => insertEach(runs, (run) => insertRun(this.#conn, run)))
  }

  getRun(id: string): Promise<RunRecord | undefined> {
    return this.#conn.read(() => {
      const row = this.#conn.row(id)
      if (!row) return undefined
      return row.run ? jsonCopy(row.run) : (JSON.parse(row.text!) as RunRecord)
    })
  }

  updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    // One UPDATE, and a lease when shared.
    const updated = this.#conn.write(
      () => updateRunRow(this.#conn, id, patch, expect, this.shared !== undefined),
      this.#conn.leaseMs === undefined,
    )
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

  /** Appends an attempt to the run's record; fenced while the store holds the run (an attempt's own). */
  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    return this.#conn.write(() => appendAttemptRow(this.#conn, runId, attempt), true)
  }

  /**
   * One row of the steps table: a step costs its own size, not its run's.
   * Fenced while the store holds the run, but for the step a suspended run
   * waits on: whoever met the wait records it.
   */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const text = JSON.stringify(step)
    return this.#conn.write(() => putStep(this.#conn, runId, key, text, true), true)
  }

  /**
   * `ctx.step.transaction`: `work` runs on the store's connection, in a
   * savepoint of the open batch, and its step is recorded in the same
   * savepoint. A `work` that awaits keeps the batch open, and the store's
   * other writes wait for it (`GroupCommit.writeAcross`), up to
   * `transactionTimeoutMs`.
   */
  async transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    const conn = this.#conn
    const db = conn.db
    const save = (output: T): T => {
      putStep(conn, runId, key, JSON.stringify(record(output)), false)
      return output
    }
    // Statements of the app's own: prepared each time, since their text is the app's.
    const app: SqlConnection = {
      query: (text, params) => db.prepare(text).all(...params) as Record<string, unknown>[],
      run: (text, params) => Number(db.prepare(text).run(...params).changes),
    }
    return conn.batch.writeAcross(() => {
      conn.checkHeld(runId)
      const output = runSqlTransactionBounded(app, key, work, this.#transactionTimeoutMs)
      return isThenable(output) ? (output as Promise<T>).then(save) : save(output)
    })
  }

  listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return this.#conn.read(() => {
      // A send reads the waits on its name: mostly none, which a probe tells.
      const name = query.waitingForEvent
      if (typeof name === 'string' && !this.#conn.sql(ANY_EVENT_WAIT).get(name)) return []
      const list = listRunsQuery(query)
      if (!list) return []
      const rows = this.#conn.sql(list.text).all(...list.params) as unknown as { record: string }[]
      return rows.map((row) => JSON.parse(row.record) as RunRecord)
    })
  }

  countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<{ taskName: string; count: number }[]> {
    return this.#conn.read(() => {
      const count = countRunsByTaskQuery(status)
      if (!count) return []
      const rows = this.#conn.sql(count.text).all(...count.params) as unknown as { task_name: string; count: number }[]
      return rows.map((row) => ({ taskName: row.task_name, count: Number(row.count) }))
    })
  }

  async saveTimer(timer: TimerRecord): Promise<void> {
    const record = JSON.stringify(timer)
    return this.#conn.write(() => {
      if (ATTEMPT_TIMERS.has(timer.kind)) this.#conn.checkHeld(timer.runId)
      this.#conn.sql(UPSERT_TIMER_DUE).run(timer.id, timer.runId, timer.dueAt, record)
    }, true)
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    return this.#conn.write(() => {
      // `all()` runs the claiming statement to completion.
      const [row] = this.#conn.sql(TAKE_TIMER).all(id) as unknown as { record: string }[]
      return row && (JSON.parse(row.record) as TimerRecord)
    })
  }

  async dropTimersOf(runId: string): Promise<string[]> {
    return this.#conn.write(() => (this.#conn.sql(DROP_RUN_TIMERS).all(runId) as unknown as { id: string }[]).map((row) => row.id), true)
  }

  listTimers(): Promise<TimerRecord[]> {
    return this.#conn.read(() => {
      const rows = this.#conn.sql(LIST_TIMERS).all() as unknown as { record: string }[]
      return rows.map((row) => JSON.parse(row.record) as TimerRecord)
    })
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    const record = JSON.stringify(token)
    return this.#conn.write(() => {
      this.#conn.checkHeld(token.runId)
      this.#conn.sql(INSERT_TOKEN).run(token.id, token.runId, token.status, record)
      return this.#conn.token(token.id)!
    })
  }

  getToken(id: string): Promise<TokenRecord | undefined> {
    return this.#conn.read(() => this.#conn.token(id))
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    return this.#conn.write(() => runProcedure(settleTokenSql(id, status, payload), this.#conn.runner))
  }

  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    const conn = this.#conn
    // Reads and writes share the batch's write lock: no other process can start a run in between.
    return conn.write(() => {
      const { result, written } = runProcedure(startQueuedSql(taskName, limits, now), conn.runner)
      const fences: number[] = []
      for (const row of written) {
        // Started here: this store holds them (owners.ts).
        fences.push((conn.sql(SET_OWNER).get(conn.owner, row.row.seq) as { owner_fence: number }).owner_fence)
        conn.cacheWritten(row)
      }
      // Last: a statement that throws above undoes the claims, which then hold nothing here.
      for (let i = 0; i < written.length; i++) madeRunning(conn, written[i].id, Number(written[i].row.seq), fences[i])
      return result
    })
  }

  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const conn = this.#conn
    return conn.write(() => {
      // A join, like an insert, is a child's start: only while its parent's attempt holds the parent.
      if (run.parentRunId !== undefined) conn.checkHeld(run.parentRunId)
      const held = run.idempotencyKey !== undefined && conn.sql(SELECT_RUN_BY_KEY).get(run.taskName, run.idempotencyKey)
      const join = held ? undefined : runProcedure(joinScheduledSql(run, keyPath), conn.runner)
      if (!join) return insertRun(conn, run)
      conn.cacheWritten(join.written)
      return join.joined
    })
  }

  async pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    const conn = this.#conn
    return conn.write(() => {
      for (const text of PRUNE_WITH_RUNS) conn.sql(text).run(taskName, limit, before)
      return conn.forget(conn.sql(PRUNE_RUNS).all(taskName, limit, before) as unknown as { id: string }[])
    })
  }
}
