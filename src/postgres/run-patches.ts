/**
 * How `PostgresRunStore` changes a run it holds (`updateRun`,
 * `appendAttempt`). Each `updateRun` is a row of the statement of
 * run-updates.ts, and the calls made while one is in flight go together
 * (group-commit.ts), each answered once they committed. Under this
 * process's lease (`updateRun` expecting `running` only, and
 * `appendAttempt`), the write checks the fence in its own statement.
 */
import { LeaseLostError } from '../runtime/errors.ts'
import { expectsRunning } from '../runtime/tasks/engine/fenced-writes.ts'
import { isFinished, type RunPatch, showsPatch } from '../runtime/tasks/store/store.ts'
import type { Attempt, RunRecord, RunStatus } from '../types.ts'
import { type PostgresConnection, WHERE } from './connection.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'
import { type RunUpdate, updateRunsPg } from './run-updates.ts'

/** The most `updateRun` calls one statement makes. */
const UPDATE_BATCH = 500

export interface RunPatchesOptions {
  /** Reads runs again, for a batch whose answer was lost (run-reads.ts). */
  getRuns(ids: string[]): Promise<(RunRecord | undefined)[]>
  /** Wakes the processes sharing the database (`SharedWork.wake`). */
  wake(): Promise<void>
}

export class RunPatches {
  readonly #conn: PostgresConnection
  readonly #options: RunPatchesOptions
  /** Every attempt ends: under load, many ends go together. */
  readonly #updates = new GroupCommit<RunUpdate, RunRecord | undefined>((updates) => this.#updateBatch(updates), {
    key: (update) => update.id,
    max: UPDATE_BATCH,
  })

  constructor(conn: PostgresConnection, options: RunPatchesOptions) {
    this.#conn = conn
    this.#options = options
  }

  /** `RunStore.updateRun`: a row of the next batch's statement. */
  async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const fence = expectsRunning(expect) ? this.#conn.fences.of(id) : undefined
    const row = await this.#updates.add({ id, patch, expect, fence })
    // Under the lease the run is running: only a cancel, which moves the
    // fence, changes the status of a running run from outside its attempt.
    if (!row && fence) throw new LeaseLostError(id)
    // The process running a cancelled run's attempt learns of it when it
    // renews its lease (which then fails); waking the processes has them
    // renew now rather than within leaseMs / 3.
    if (row && patch.status === 'cancelled') await this.#options.wake()
    return row
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    const conn = this.#conn
    const fence = conn.fences.of(runId)
    return conn.run(async (sql) => {
      const rows = await sql`
        UPDATE ${sql(conn.schema)}.runs
        SET record = CASE WHEN record->'attempts'->-1 = ${sql.json(attempt as never)}::jsonb THEN record
          ELSE jsonb_set(record, '{attempts}', coalesce(record->'attempts', '[]') || jsonb_build_array(${sql.json(attempt as never)}::jsonb)) END
        WHERE id = ${runId} ${fence ? sql`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint` : sql``}
        RETURNING 1`
      if (rows.length > 0) return
      throw fence ? new LeaseLostError(runId) : new Error(`${WHERE}: unknown run "${runId}"`)
    })
  }

  /**
   * The `updateRun` calls of a batch, in one statement. A statement that
   * fails changed nothing: when it held more than one call, each goes
   * again alone and answers for itself (a string Postgres cannot store).
   */
  #updateBatch(updates: RunUpdate[]): Promise<(RunRecord | undefined | ItemFailure)[]> {
    const conn = this.#conn
    return togetherOrAlone(updates, async (batch) => {
      let again = false
      const { runs, released } = await conn.run((sql, maybeWritten) => {
        again = maybeWritten
        return updateRunsPg(sql, conn.schema, conn.leaseMs, batch)
      })
      for (const runId of released) conn.fences.endReleased(runId)
      return again ? this.#ownUpdates(batch, runs) : runs
    })
  }

  /**
   * The answers of a batch sent again after its connection dropped: a call
   * whose condition failed may have failed it against its own write, which
   * the first statement committed. Such a run shows its patch
   * (`showsPatch`), and is that call's answer; an end under a lease gave
   * the lease up with it.
   */
  async #ownUpdates(batch: RunUpdate[], runs: (RunRecord | undefined)[]): Promise<(RunRecord | undefined)[]> {
    const missed = batch.filter((_, i) => runs[i] === undefined)
    if (missed.length === 0) return runs
    const now = await this.#options.getRuns(missed.map((update) => update.id))
    const answers = [...runs]
    for (const [j, update] of missed.entries()) {
      const run = now[j]
      if (run === undefined || !showsPatch(run, update.patch)) continue
      answers[batch.indexOf(update)] = run
      if (update.fence !== undefined && isFinished(run.status)) this.#conn.fences.endReleased(update.id)
    }
    return answers
  }
}
