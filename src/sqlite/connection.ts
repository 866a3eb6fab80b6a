/**
 * What a `SqliteRunStore` keeps of its file (store.ts): the connection and
 * its prepared statements, the group commit its writes go through, the
 * cache of the rows it wrote or read with the counts beside it, eviction
 * past `maxRuns`, and the fences of the runs it holds. The store's methods
 * (store.ts, run-writes.ts) are written on this; nothing here is public.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { LeaseLostError } from '../runtime/errors.ts'
import type { TokenRecord } from '../runtime/tasks/store/store.ts'
import {
  COUNT_RUNS,
  EVICT_RUNS,
  EVICT_WITH_RUNS,
  LAST_FINISHED_SEQ,
  type RunRow,
  SELECT_RUN,
  finishSeqOf,
} from '../runtime/tasks/sql/queries.ts'
import type { WrittenRow } from '../runtime/tasks/sql/flow.ts'
import { runProcedure, type SqlRunner } from '../runtime/tasks/sql/procedure.ts'
import { tokenSql } from '../runtime/tasks/sql/tokens.ts'
import type { RunRecord, RunStatus } from '../types.ts'
import { HELD } from './fences.ts'
import { storeError } from './errors.ts'
import { PendingTags } from './pending-tags.ts'
import { GroupCommit } from './group-commit.ts'
import { type CachedRun, RowCache } from './row-cache.ts'

export const WHERE = 'SqliteRunStore'

// The bound of the row cache, in characters of record text (store.ts says how much heap that is).
const ROW_CACHE_WEIGHT = 64 * 1024 * 1024

/**
 * Row counts, read at the first need and kept up to date by this
 * connection's writes, for as long as no other connection writes (the
 * row cache's check): a count is a scan of the table.
 */
export interface Counts {
  total: number
  live: number
  /** The highest eviction position given so far, read at its first need. */
  lastFinished?: number
}

/** What the processes sharing the file do around each batch (shared-work.ts). */
export interface BatchListener {
  beforeCommit(): void
  batchEnded(ok: boolean): void
}

export class SqliteConnection {
  readonly path: string
  readonly maxRuns: number
  readonly batch: GroupCommit
  /** This store's id in the file's `owners` table (owners.ts), set once it has joined them. */
  owner = 0
  /** With `shared`: how long the lease a run gets when it is made running lasts, before anyone's dispatch takes it. */
  leaseMs: number | undefined
  /** With `shared`: told of each batch (the run changes published since the last go out with the next). */
  listener: BatchListener | undefined
  /**
   * The runs this store holds, by id, with the `owner_fence` its claim set
   * (fences.ts): from when a write makes the run running here to when one
   * writes it out of `running`; with `shared`, from when its engine takes
   * the run's lease to when it gives it up (as on Postgres, the attempt's
   * writes after suspending are fenced too). A fence another process moved
   * on stays until then: every later write of the attempt fails as the first.
   */
  readonly fences = new Map<string, number>()
  /**
   * The batch took the store past `maxRuns`: the runs that finished longest
   * ago are evicted once, right before its COMMIT, in one statement for the
   * whole batch rather than one per write. Other processes only ever see
   * the bound hold (they read committed state).
   */
  evictAtCommit = false
  /** The tag rows of the runs the open batch inserted, written right before its COMMIT (pending-tags.ts). */
  readonly tags = new PendingTags()
  readonly #busyTimeoutMs: number
  #db: DatabaseSync | undefined
  readonly #statements = new Map<string, StatementSync>()
  #counts: Counts | undefined
  readonly #rows = new RowCache(ROW_CACHE_WEIGHT)
  /** Set while the cache is known fresh for this turn: the local commit count it was checked at. */
  #rowsChecked: number | undefined

  constructor(db: DatabaseSync, path: string, maxRuns: number, busyTimeoutMs: number) {
    this.#db = db
    this.path = path
    this.maxRuns = maxRuns
    this.#busyTimeoutMs = busyTimeoutMs
    this.batch = new GroupCommit(db, path, {
      error: (error) => this.error(error),
      begin: () => this.checkRows(),
      savepoint: () => this.tags.savepoint(),
      undone: () => this.tags.undo(),
      commit: () => {
        this.listener?.beforeCommit()
        // Before eviction, whose delete trigger takes the rows of the runs it removes.
        this.tags.write((text) => this.sql(text))
        if (!this.evictAtCommit) return
        this.evictAtCommit = false
        this.#evict()
      },
      end: (ok) => {
        this.listener?.batchEnded(ok)
        if (ok) return
        // Rolled back: the cached rows and the counts may hold its writes.
        this.evictAtCommit = false
        this.tags.clear()
        this.#counts = undefined
        this.#rows.clear()
      },
    })
  }

  /** The connection, or a throw naming the file once the store is closed. */
  get db(): DatabaseSync {
    if (!this.#db) throw new Error(`${WHERE}: the store for ${this.path} is closed`)
    return this.#db
  }

  get open(): boolean {
    return this.#db !== undefined
  }

  /** Closes the connection: later calls throw. The caller commits what waits first. */
  close(): void {
    const db = this.#db
    if (!db) return
    this.#db = undefined
    this.#statements.clear()
    this.fences.clear()
    db.close()
  }

  /** `text` prepared once on this connection. */
  sql(text: string): StatementSync {
    let statement = this.#statements.get(text)
    if (!statement) {
      statement = this.db.prepare(text)
      this.#statements.set(text, statement)
    }
    return statement
  }

  /** The statements of this connection, for the SQL shared with the Durable Object store. */
  readonly runner: SqlRunner = {
    all: (query, params) => this.sql(query).all(...params) as Record<string, unknown>[],
    run: (query, params) => {
      this.sql(query).run(...params)
    },
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
  write<T>(fn: () => T, oneChange = false): Promise<T> {
    if (!this.#db) return Promise.reject(new Error(`${WHERE}: the store for ${this.path} is closed`))
    return this.batch.write(() => {
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

  /** Runs `fn`, a read, on what is committed (`GroupCommit.read`). */
  read<T>(fn: () => T): Promise<T> {
    return this.batch.read(fn)
  }

  /** What a call rejects with for `error`: `StoreUnavailableError` for a file that cannot be used now. */
  error(error: unknown): unknown {
    return storeError(error, WHERE, this.#busyTimeoutMs)
  }

  /** The row counts, read at the first need since another connection wrote. */
  countsNow(): Counts {
    this.#counts ??= this.sql(COUNT_RUNS).get() as unknown as Counts
    return this.#counts
  }

  /** The counts when they are known, without reading them. */
  get counts(): Counts | undefined {
    return this.#counts
  }

  /** The row of run `id`, cached or read. */
  row(id: string): CachedRun | undefined {
    // Inside a batch the cache was checked when it took the write lock, and
    // nobody else can write. Outside one (a read, which runs only while no
    // batch is open), once per event-loop turn, and again whenever another
    // connection in this process has committed: a read sees what other
    // processes had committed when the turn began.
    if (!this.batch.open && (this.#rowsChecked === undefined || this.#rowsChecked !== this.batch.localCommits)) {
      this.checkRows()
      this.#rowsChecked = this.batch.localCommits
      setImmediate(() => {
        this.#rowsChecked = undefined
      })
    }
    const cached = this.#rows.get(id)
    if (cached) return cached
    const row = this.sql(SELECT_RUN).get(id) as RunRow | undefined
    return row && this.cacheWritten({ id, row })
  }

  /** The store's own record of a cached row, parsed at the first write that needs it. */
  parsed(id: string, row: CachedRun): RunRecord {
    if (row.run) return row.run
    const text = row.text!
    const run = JSON.parse(text) as RunRecord
    this.cache(id, row.seq, row.finished_seq, run, text)
    return run
  }

  /** Caches a row just written or read: `run` (the store's own record) while the run is live, else its text. */
  cache(id: string, seq: number, finishSeq: number | null, run: RunRecord | undefined, text: string): CachedRun {
    // Both shapes carry every field, so the cache's rows share one hidden class.
    const row: CachedRun = run
      ? { seq, finished_seq: finishSeq, run, text: undefined, weight: 0 }
      : { seq, finished_seq: finishSeq, run: undefined, text, weight: 0 }
    this.#rows.set(id, row, text.length)
    return row
  }

  cacheWritten({ id, row }: WrittenRow): CachedRun {
    return this.cache(id, Number(row.seq), row.finished_seq, undefined, row.record)
  }

  /** A live run's cached record took a step of `size` characters. */
  grew(id: string, size: number): void {
    this.#rows.grow(id, size)
  }

  /** Drops run `id` from the cache: its text is read again when next asked for. */
  uncache(id: string): void {
    this.#rows.delete(id)
  }

  /** Empties the row cache, and forgets the counts, when another connection has committed since they were read. */
  checkRows(): void {
    if (!this.#rows.check(Number((this.sql('PRAGMA data_version').get() as { data_version: number }).data_version)))
      this.#counts = undefined
  }

  token(id: string): TokenRecord | undefined {
    return runProcedure(tokenSql(id), this.runner)
  }

  /** Throws `LeaseLostError` unless this store still holds run `runId` under the fence it keeps; a run not held here passes. */
  checkHeld(runId: string): void {
    const fence = this.fences.get(runId)
    if (fence !== undefined && this.sql(HELD).get(runId, this.owner, fence) === undefined) throw new LeaseLostError(runId)
  }

  /** What a write of a run the file no longer holds throws: gone while held here, it was taken over, finished and evicted. */
  unknownRun(runId: string, fence: number | undefined): Error {
    return fence === undefined ? new Error(`${WHERE}: unknown run "${runId}"`) : new LeaseLostError(runId)
  }

  /** The eviction position of a run in `status` (`finishSeqOf`), counted from the file's last one. */
  finishSeq(status: RunStatus, current: number | null): number | null {
    return finishSeqOf(status, current, () => {
      const counts = this.countsNow()
      if (counts.lastFinished === undefined) {
        const row = this.sql(LAST_FINISHED_SEQ).get() as { n: number | null }
        counts.lastFinished = row.n ?? 0
      }
      return ++counts.lastFinished
    })
  }

  /** Drops the runs that finished longest ago, and what goes with them, until the bound holds again. */
  #evict(): void {
    const excess = this.countsNow().total - this.maxRuns
    if (excess <= 0) return
    for (const text of EVICT_WITH_RUNS) this.sql(text).run(excess)
    // RETURNING names the evicted runs, to drop them from the cache.
    this.forget(this.sql(`${EVICT_RUNS} RETURNING id`).all(excess) as unknown as { id: string }[])
  }

  /** What this store holds of runs just deleted goes too; returns how many they were. */
  forget(gone: readonly { id: string }[]): number {
    for (const { id } of gone) {
      this.#rows.delete(id)
      // Finished by another process after this one lost it: nothing more to fence.
      this.fences.delete(id)
    }
    this.countsNow().total -= gone.length
    return gone.length
  }
}
