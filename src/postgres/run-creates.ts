/**
 * How `PostgresRunStore` creates runs (`createRun`, `createRuns`,
 * `debounceRun`): each run is a row of the statement of run-inserts.ts,
 * and the `createRun` calls made while one is in flight go together
 * (group-commit.ts), each answered once they committed. With `leaseOwner`
 * (`shared.leasesOnCreate`), a run inserted `running` is held here under
 * the fence its insert set; a child run's insert is fenced by its parent's
 * lease.
 */
import type { RunRecord } from '../types.ts'
import { LeaseLostError, StoreFullError } from '../runtime/errors.ts'
import { type PostgresConnection, WHERE } from './connection.ts'
import type { Fence } from './fences.ts'
import { debounceRunPg } from './flow.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'
import { inPipelinedTransaction } from './pipelined.ts'
import { wholeRecord } from './records.ts'
import { type InsertAnswer, insertKey, insertRunsPg, type RunInsert } from './run-inserts.ts'

// SQLSTATE code (Postgres manual, appendix A): unique_violation.
const UNIQUE_VIOLATION = '23505'
/**
 * The most runs one statement inserts: its parameters and the rows it
 * hands back stay small beside its commit.
 */
const INSERT_BATCH = 500

type Row<T> = { record: T }

export class RunCreates {
  readonly #conn: PostgresConnection
  /** Every trigger creates a run: under load, many go together. */
  readonly #creates = new GroupCommit<RunInsert, InsertAnswer>((inserts) => this.#insertBatch(inserts), {
    key: insertKey,
    max: INSERT_BATCH,
  })

  constructor(conn: PostgresConnection) {
    this.#conn = conn
  }

  /** `RunStore.createRun`: a row of the next batch's statement. */
  async createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord> {
    const conn = this.#conn
    const fence = this.#parentFence(run)
    const insert: RunInsert = { run, fence, owner: leaseOwner }
    try {
      const answer = await this.#creates.add(insert)
      // A fence comes back only for a run inserted under leaseOwner.
      if (answer.fence !== null) conn.fences.claimed(leaseOwner!, run.id, answer.fence)
      return this.#answer(run, answer)
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
      // Sent again after its connection dropped: the id may be held by this
      // call's own insert, whose answer was lost.
      if (insert.maybeWritten && (error as { constraint_name?: string }).constraint_name === 'runs_id_key') {
        const own = await this.#ownInsert(run, leaseOwner)
        if (own) return own
      }
      if ((error as { constraint_name?: string }).constraint_name === 'runs_by_key') {
        // A finished run (inserted without the lock) raced another holder of its key.
        const [held] = await conn.run(
          (sql) => sql<Row<RunRecord>[]>`
            SELECT ${wholeRecord(sql, conn.schema)} AS record FROM ${sql(conn.schema)}.runs
            WHERE task_name = ${run.taskName} AND idempotency_key = ${run.idempotencyKey!}`,
        )
        if (held) return held.record
      }
      throw new Error(`${WHERE}: run "${run.id}" already exists`, { cause: error })
    }
  }

  /**
   * Every run in one transaction: statements of run-inserts.ts of up to
   * `INSERT_BATCH` runs each, sent whole (pipelined.ts), so the batch waits
   * for one round trip and one commit. Each run answers as `createRun`
   * does. A run that shares its key with another of the batch, or races
   * another holder of its key, aborts the transaction; the runs are then
   * created one by one, which settles that.
   */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    const conn = this.#conn
    const full = () => new StoreFullError(WHERE, conn.maxRuns)
    const chunks: RunInsert[][] = []
    for (let i = 0; i < runs.length; i += INSERT_BATCH)
      chunks.push(runs.slice(i, i + INSERT_BATCH).map((run) => ({ run, fence: undefined })))
    try {
      const answers = await conn.run(
        (sql) =>
          inPipelinedTransaction(sql, (tx) =>
            chunks.map((chunk) => insertRunsPg(tx, conn.schema, conn.maxRuns, conn.leaseMs, chunk, conn.evictions.from)),
          ),
        true,
      )
      for (const rows of answers) conn.evictions.reached(rows[0]?.evicted_to)
      return answers.flat().map((row) => row.held ?? row.inserted ?? full())
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
      return Promise.all(
        runs.map((run) =>
          this.createRun(run).catch((thrown: unknown) => (thrown instanceof StoreFullError ? thrown : Promise.reject(thrown))),
        ),
      )
    }
  }

  /** Flow control: see `RunStore.debounceRun`; the transaction is in flow.ts. */
  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const conn = this.#conn
    const fence = this.#parentFence(run)
    // Sent once: a transaction whose answer was lost cannot tell its own insert from another's.
    return conn.run(
      (sql) =>
        debounceRunPg(sql, conn.schema, run, keyPath, async (tx) => {
          const [row] = await insertRunsPg(tx, conn.schema, conn.maxRuns, conn.leaseMs, [{ run, fence }], conn.evictions.from)
          conn.evictions.reached(row.evicted_to)
          return this.#answer(run, row)
        }),
      true,
    )
  }

  /**
   * `run` as the store holds it when it is this very run (same task, same
   * creation time), its lease taken up again when it was inserted leased
   * to `leaseOwner`; undefined for another run under its id.
   */
  async #ownInsert(run: RunRecord, leaseOwner: string | undefined): Promise<RunRecord | undefined> {
    const conn = this.#conn
    const [row] = await conn.run(
      (sql) => sql<(Row<RunRecord> & { lease_owner: string | null; fence: string })[]>`
        SELECT ${wholeRecord(sql, conn.schema)} AS record, lease_owner, lease_fence::text AS fence FROM ${sql(conn.schema)}.runs
        WHERE id = ${run.id}`,
    )
    if (!row || row.record.taskName !== run.taskName || row.record.createdAt !== run.createdAt) return undefined
    if (leaseOwner !== undefined && row.lease_owner === leaseOwner) conn.fences.claimed(leaseOwner, run.id, row.fence)
    return row.record
  }

  /** What `createRun` answers for an inserted row: the run, the run that holds its key, or why neither. */
  #answer(run: RunRecord, row: InsertAnswer): RunRecord {
    if (!row.leased) throw new LeaseLostError(run.parentRunId!)
    if (row.held) return row.held
    if (row.inserted) return row.inserted
    throw new StoreFullError(WHERE, this.#conn.maxRuns)
  }

  /**
   * The `createRun` calls of a batch, in one statement: the row of counts
   * is locked once for all of them, and they wait for one commit. A held
   * key, a full store and a lost lease are answers, not errors. A
   * statement that fails wrote nothing: when it held more than one run,
   * each goes again alone and answers for itself (a key another process
   * raced for, a string Postgres cannot store).
   */
  #insertBatch(inserts: RunInsert[]): Promise<(InsertAnswer | ItemFailure)[]> {
    const conn = this.#conn
    return togetherOrAlone(inserts, (batch) =>
      conn.run((sql, maybeWritten) => {
        if (maybeWritten) for (const insert of batch) insert.maybeWritten = true
        return insertRunsPg(sql, conn.schema, conn.maxRuns, conn.leaseMs, batch, conn.evictions.from).then((rows) => {
          conn.evictions.reached(rows[0]?.evicted_to)
          return rows
        })
      }),
    )
  }

  /** The fence of the lease held here on the run whose attempt starts `run` as its child, if any. */
  #parentFence(run: RunRecord): Fence | undefined {
    return run.parentRunId === undefined ? undefined : this.#conn.fences.of(run.parentRunId)
  }
}
