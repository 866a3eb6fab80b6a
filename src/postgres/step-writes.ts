/**
 * How `PostgresRunStore` records steps: `saveStep`, a row of the statement
 * of step-saves.ts whose calls made while one is in flight go together
 * (group-commit.ts), and `transactStep`, the app's own transaction with
 * the step's record in it (`ctx.step.transaction`). Under a lease held
 * here, both check its fence and reject with `LeaseLostError` once it
 * moved on.
 */
import type { PendingQuery, Sql } from 'postgres'
import { LeaseLostError } from '../runtime/errors.ts'
import type { StepRecord } from '../types.ts'
import { type PostgresConnection, WHERE } from './connection.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'
import { type StepSave, saveStepsPg, stepKey } from './step-saves.ts'
import { inTransaction, stepTransaction } from './transaction.ts'

// SQLSTATE code (Postgres manual, appendix A): foreign_key_violation, a step of a run the store does not hold.
const FOREIGN_KEY_VIOLATION = '23503'
/** The most saves one statement makes. */
export const SAVE_BATCH = 500

export class StepWrites {
  readonly #conn: PostgresConnection
  /** Every step of every attempt is saved: under load, many go together. */
  readonly #saves = new GroupCommit<StepSave, boolean>(
    (saves) => savedEach(this.#conn, saves, (sql, batch) => saveStepsPg(sql, this.#conn.schema, batch)),
    { key: stepKey, max: SAVE_BATCH },
  )

  constructor(conn: PostgresConnection) {
    this.#conn = conn
  }

  /**
   * A row of the statement of step-saves.ts. A statement that fails wrote
   * nothing: when it held more than one save, each goes again alone and
   * answers for itself (a run the store does not hold).
   */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const fence = this.#conn.fences.of(runId)
    try {
      const saved = await this.#saves.add({ runId, key, step, fence })
      if (!saved) throw new LeaseLostError(runId)
    } catch (error) {
      if ((error as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw error
      throw new Error(`${WHERE}: unknown run "${runId}"`, { cause: error })
    }
  }

  /**
   * `ctx.step.transaction`: one Postgres transaction that runs `work`,
   * then writes the step's record in a statement that locks the run's row
   * `FOR SHARE` under the fence this process holds it with. Once the
   * fence has moved on (another process claimed the run), the statement
   * writes nothing and it all rolls back; a claim that comes later waits
   * for the commit (the lock conflicts with its update), so the process
   * that claimed the run reads the step as recorded. The lock is held from
   * the record to the commit only, not while `work` runs. The record is
   * inserted, never overwritten: a step recorded meanwhile by another
   * execution (one that held no fence, or raced this one) fails this one,
   * and its work rolls back with it. A failure of any part rolls all of it
   * back, and is not retried here: the attempt fails.
   */
  async transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    const conn = this.#conn
    const fence = conn.fences.of(runId)
    return conn.run(
      (sql) =>
        inTransaction(sql, async (tx) => {
          const output = await work(stepTransaction(tx, key))
          const schema = tx(conn.schema)
          const held = fence === undefined ? tx`` : tx`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint`
          const [row] = await tx<{ leased: boolean; inserted: boolean }[]>`
            WITH lease AS (SELECT 1 FROM ${schema}.runs WHERE id = ${runId} ${held} FOR SHARE),
            inserted AS (
              INSERT INTO ${schema}.steps (run_id, key, record) SELECT ${runId}, ${key}, ${tx.json(record(output) as never)}::jsonb FROM lease
              ON CONFLICT (run_id, key) DO NOTHING
              RETURNING 1
            )
            SELECT EXISTS (SELECT 1 FROM lease) AS leased, EXISTS (SELECT 1 FROM inserted) AS inserted`
          if (!row.leased) throw fence === undefined ? new Error(`${WHERE}: unknown run "${runId}"`) : new LeaseLostError(runId)
          if (!row.inserted) {
            // Another execution recorded the step and committed its work: this one's is undone.
            throw fence === undefined
              ? new Error(`${WHERE}: step "${key}" of run "${runId}" is recorded already; this execution's transaction is rolled back`)
              : new LeaseLostError(runId)
          }
          return output
        }) as Promise<T>,
      true,
    )
  }
}

/**
 * A batch of saves sent in `statement`, which answers the index of each
 * save it wrote (`i`): whether each landed; a failed statement, each
 * alone (`togetherOrAlone`).
 */
export function savedEach<T>(
  conn: PostgresConnection,
  saves: T[],
  statement: (sql: Sql, batch: T[]) => PendingQuery<{ i: number }[]>,
): Promise<(boolean | ItemFailure)[]> {
  return togetherOrAlone(saves, async (batch) => {
    const rows = await conn.run((sql) => statement(sql, batch))
    const saved = new Set(rows.map((row) => row.i))
    return batch.map((_, i) => saved.has(i))
  })
}
