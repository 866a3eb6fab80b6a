/**
 * `PostgresRunStore`: a durable `RunStore` on Postgres, through the
 * `postgres` driver. Runs, steps, timers, tokens, idempotency keys and
 * events live in one database that any number of processes may share.
 *
 * Every compare-and-set point of the `RunStore` contract is one statement
 * (`UPDATE … WHERE status = ANY(expected) RETURNING`, `INSERT … ON CONFLICT`,
 * `DELETE … RETURNING`); `createRun` of a live run locks the row of counts
 * that triggers keep, so that processes counting live runs against
 * `maxRuns` cannot both take the last place. Row locks and Postgres's
 * re-check of a concurrently updated row (READ COMMITTED) do the rest: of
 * two processes racing for one transition, exactly one wins.
 *
 * Most changes are one round trip: the patch or the appended attempt is
 * applied to the `jsonb` record inside the statement rather than read,
 * changed and written back. A step is a row of its own (records.ts), and
 * every read of a record puts its run's steps back.
 *
 * The calls every run makes go in batches (group-commit.ts): creating it
 * (run-inserts.ts), saving its steps (step-saves.ts), ending it
 * (run-updates.ts), reading it, and taking its lease (shared.ts). The
 * first call goes at once; the calls made while it is in flight go
 * together in one statement, each row of it doing what the call would do
 * alone, and each call is answered once that statement committed. Under
 * load that is one commit for many runs, where a commit a run would queue
 * behind the others: every statement that creates or finishes runs updates
 * the one row of `run_counts` (migrations.ts), which its transaction holds
 * to its commit.
 *
 * The writes an attempt makes are fenced (fences.ts) while this process
 * holds the run's lease: its steps, its end (`updateRun` expecting the
 * run `running` and nothing else, `appendAttempt`), the children it starts
 * (`createRun` with its `parentRunId`), its tokens (`putToken`) and the
 * timers it sets for itself (`saveTimer` of a retry, a sleep or a token's
 * timeout). Each checks the fence in its own statement and rejects with
 * `LeaseLostError` when another claim moved it on. What the engine writes
 * for a run outside its attempt is not fenced: a cancel (`updateRun` that
 * expects any live status) wins over every lease and moves the fence on
 * itself, and a met waitpoint (`updateRun` expecting `suspended`, and the
 * waited step of a suspended run) resumes the run whoever met it.
 */
import type { Fragment, PendingQuery, Sql, TransactionSql } from 'postgres'
import { LeaseLostError, StoreFullError } from '../runtime/errors.ts'
import {
  type EventRecord,
  isFinished,
  type RunPatch,
  type RunQuery,
  type RunStore,
  showsPatch,
  type TimerRecord,
  type TokenRecord,
} from '../runtime/tasks/store.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { EventEffects, EventListQuery } from '../runtime/types/run-store.ts'
import { type Fence, Fences } from './fences.ts'
import { EVENT_WAIT_NAME, migrate } from './migrations.ts'
import { wholeRecord } from './records.ts'
import { pruneFinished } from './retention.ts'
import { inTransaction, stepTransaction } from './transaction.ts'
import { inPipelinedTransaction } from './pipelined.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'
import { type RunUpdate, updateRunsPg } from './run-updates.ts'
import { EvictionFloor } from './eviction-floor.ts'
import { type InsertAnswer, insertKey, insertRunsPg, type RunInsert } from './run-inserts.ts'
import { type StepSave, saveStepsPg, stepKey } from './step-saves.ts'
import { saveTimersPg, type TimerSave } from './timer-saves.ts'
import { resolvePostgresOptions, type PostgresRunStoreOptions } from './options.ts'
import { redactUrl } from '../runtime/redact.ts'
import { PostgresSharedWork } from './shared.ts'
import { Availability } from './availability.ts'
import { createClient, typesKnown } from './client.ts'
import { settleTokenPg, tokenSettlement } from './tokens.ts'
import { connectionFailed, isTransient, unreachable } from './transient.ts'
import { debounceRunPg, startQueuedPg } from './flow.ts'
import { eventsSincePg, listEventsPg, noteEventEffectsPg, putEventPg } from './events.ts'
import type { FlowLimits } from '../runtime/tasks/flow.ts'
import type { StartedRuns } from '../runtime/tasks/store.ts'
import type { EventMatch } from '../runtime/events/match.ts'
import { ATTEMPT_TIMERS, expectsRunning } from '../runtime/tasks/fenced-writes.ts'

export type { PostgresRunStoreOptions } from './options.ts'

const WHERE = 'PostgresRunStore'
// SQLSTATE codes (Postgres manual, appendix A): unique_violation,
// foreign_key_violation (a step of a run the store does not hold), and
// untranslatable_character, which jsonb raises for \u0000 in a string.
const UNIQUE_VIOLATION = '23505'
const FOREIGN_KEY_VIOLATION = '23503'
const UNTRANSLATABLE_CHARACTER = '22P05'
/**
 * The waits before each new try of a call that met a passing fault of the
 * database (transient.ts), in milliseconds, each drawn between half and
 * all of it: about 1.6 s in all, after which the call fails with
 * `StoreUnavailableError`. A call stops sooner once the database cannot be
 * reached at all (availability.ts).
 */
const RETRY_DELAYS_MS = [25, 50, 100, 200, 400, 800]

type Row<T> = { record: T }
/**
 * The most runs one statement inserts, and the most `updateRun` calls one
 * statement makes: its parameters and the rows it hands back stay small
 * beside its commit.
 */
const INSERT_BATCH = 500
const UPDATE_BATCH = 500
/** The most runs one read of `getRun` calls returns, each with its steps. */
const READ_BATCH = 500

/**
 * A durable run store in a Postgres database, for `startSvcServer({ store })`
 * or `createTaskRuntime({ store })`:
 *
 * ```ts
 * import { PostgresRunStore } from 'svcjs/postgres'
 * const store = new PostgresRunStore({ url: process.env.DATABASE_URL })
 * const server = await startSvcServer({ apiRoutes, pages, store })
 * // on shutdown, after the server: await server.close(); await store.close()
 * ```
 *
 * The store connects lazily and creates or migrates its tables (in
 * `schema`) before its first query; `await store.ready()` does that up
 * front and rejects when the database cannot be reached or was migrated by
 * a newer svc. Run inputs, results and step outputs are stored as `jsonb`,
 * so they come back as JSON would (a `Date` as its ISO string); a string
 * holding the NUL character (`\u0000`) cannot be stored.
 *
 * Any number of processes may share one database (`shared`): each due
 * timer, each running attempt and each cron tick is claimed by one of them;
 * a running attempt holds a lease its process renews, and when a process
 * dies another takes its attempts over once their leases lapse
 * (`leaseMs`). Idle processes look for due work every `pollMs`, and wake at
 * once when another process shuts down and lets go of its attempts. A
 * process that stalls past `leaseMs` and loses a run meanwhile writes
 * nothing more for it (fenced leases, fences.ts). One store serves one task
 * runtime: the fences it keeps are that runtime's leases.
 */
export class PostgresRunStore implements RunStore {
  /** Records live in the database and survive a restart (`recover()` re-arms waits). */
  readonly durable = true
  /** The writes of an attempt check the fence of its lease (fences.ts). */
  readonly fences = true
  readonly schema: string
  readonly maxRuns: number
  /** How long a lease on a running attempt (or a claim on a due timer) lasts. */
  readonly leaseMs: number
  /** How often an idle process looks for due work. */
  readonly pollMs: number
  /** How the processes on this database split due work, attempts and cron ticks. */
  readonly shared: PostgresSharedWork
  #url: string
  #sql: Sql | undefined
  #ready: Promise<void>
  /** Whether the database can be reached: while it cannot, calls fail at once (availability.ts). */
  readonly #availability: Availability
  /** The fences of the leases this process holds, which its attempts' writes check. */
  readonly #fences = new Fences()
  readonly #evictions = new EvictionFloor()
  /** Every trigger creates a run: under load, many go together. */
  readonly #creates = new GroupCommit<RunInsert, InsertAnswer>((inserts) => this.#insertBatch(inserts), {
    key: insertKey,
    max: INSERT_BATCH,
  })
  /** Reads of one run each: under load (callers waiting for their runs), many go together. */
  readonly #reads = new GroupCommit<string, RunRecord | undefined>((ids) => this.#getRuns(ids), { max: READ_BATCH })
  /** Every step of every attempt is saved: under load, many go together. */
  readonly #saves = new GroupCommit<StepSave, boolean>((saves) => this.#saveBatch(saves), { key: stepKey, max: UPDATE_BATCH })
  /** Timers of delayed runs, sleeps and retries: under load, many go together. */
  readonly #timers = new GroupCommit<TimerSave, boolean>((saves) => this.#saveTimers(saves), {
    key: (save) => save.timer.id,
    max: UPDATE_BATCH,
  })
  /** Every attempt ends: under load, many ends go together. */
  readonly #updates = new GroupCommit<RunUpdate, RunRecord | undefined>((updates) => this.#updateBatch(updates), {
    key: (update) => update.id,
    max: UPDATE_BATCH,
  })

  constructor(options: PostgresRunStoreOptions) {
    const { url, schema, maxRuns, leaseMs, pollMs, connectTimeoutMs, logger } = resolvePostgresOptions(options, WHERE)
    this.schema = schema
    this.maxRuns = maxRuns
    this.leaseMs = leaseMs
    this.pollMs = pollMs
    this.#url = url
    const sql = createClient(url, connectTimeoutMs)
    this.#sql = sql
    this.#availability = new Availability({ where: `${WHERE} (${redactUrl(url)})`, probe: () => sql`SELECT 1`, logger })
    this.#ready = migrate(sql, schema, WHERE).then(
      () => typesKnown(sql),
      (error: unknown) => {
        throw (error as Error).message?.startsWith(WHERE)
          ? error
          : new Error(`${WHERE}: cannot use ${redactUrl(url)}: ${(error as Error).message}`, { cause: error })
      },
    )
    // Reported by ready() and by every call; not an unhandled rejection meanwhile.
    this.#ready.catch(() => {})
    this.shared = new PostgresSharedWork({ schema, leaseMs, pollMs, fences: this.#fences, run: (query) => this.#run(query) })
  }

  /**
   * Resolves once the tables exist at this release's version; rejects with
   * the reason they cannot (unreachable database, bad credentials, a schema
   * that a newer svc migrated).
   */
  ready(): Promise<void> {
    return this.#ready
  }

  /** Number of runs retained. */
  async size(): Promise<number> {
    return this.#run(async (sql) => {
      const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${sql(this.schema)}.runs`
      return n
    })
  }

  /** Closes the connections, letting running queries finish. Later calls on the store reject. Idempotent. */
  async close(): Promise<void> {
    const sql = this.#sql
    if (!sql) return
    // The last run changes go out first: the engine publishes them after the writes that made them.
    await this.shared.closeChanges()
    this.#sql = undefined
    this.#availability.close()
    await sql.end({ timeout: 5 })
  }

  /**
   * A row of the statement of run-inserts.ts; the calls made while one is
   * in flight go together (`#insertBatch`), and each is answered once they
   * committed. With `leaseOwner` (`shared.leasesOnCreate`), a run inserted
   * `running` is held here under the fence its insert set.
   */
  async createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord> {
    const fence = this.#parentFence(run)
    const insert: RunInsert = { run, fence, owner: leaseOwner }
    try {
      const answer = await this.#creates.add(insert)
      // A fence comes back only for a run inserted under leaseOwner.
      if (answer.fence !== null) this.#fences.claimed(leaseOwner!, run.id, answer.fence)
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
        const [held] = await this.#run(
          (sql) => sql<Row<RunRecord>[]>`
            SELECT ${wholeRecord(sql, this.schema)} AS record FROM ${sql(this.schema)}.runs
            WHERE task_name = ${run.taskName} AND idempotency_key = ${run.idempotencyKey!}`,
        )
        if (held) return held.record
      }
      throw new Error(`${WHERE}: run "${run.id}" already exists`, { cause: error })
    }
  }

  /**
   * `run` as the store holds it when it is this very run (same task, same
   * creation time), its lease taken up again when it was inserted leased
   * to `leaseOwner`; undefined for another run under its id.
   */
  async #ownInsert(run: RunRecord, leaseOwner: string | undefined): Promise<RunRecord | undefined> {
    const [row] = await this.#run(
      (sql) => sql<(Row<RunRecord> & { lease_owner: string | null; fence: string })[]>`
        SELECT ${wholeRecord(sql, this.schema)} AS record, lease_owner, lease_fence::text AS fence FROM ${sql(this.schema)}.runs
        WHERE id = ${run.id}`,
    )
    if (!row || row.record.taskName !== run.taskName || row.record.createdAt !== run.createdAt) return undefined
    if (leaseOwner !== undefined && row.lease_owner === leaseOwner) this.#fences.claimed(leaseOwner, run.id, row.fence)
    return row.record
  }

  /** What `createRun` answers for an inserted row: the run, the run that holds its key, or why neither. */
  #answer(run: RunRecord, row: InsertAnswer): RunRecord {
    if (!row.leased) throw new LeaseLostError(run.parentRunId!)
    if (row.held) return row.held
    if (row.inserted) return row.inserted
    throw new StoreFullError(WHERE, this.maxRuns)
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
    return togetherOrAlone(inserts, (batch) =>
      this.#run((sql, maybeWritten) => {
        if (maybeWritten) for (const insert of batch) insert.maybeWritten = true
        return insertRunsPg(sql, this.schema, this.maxRuns, this.leaseMs, batch, this.#evictions.from).then((rows) => {
          this.#evictions.reached(rows[0]?.evicted_to)
          return rows
        })
      }),
    )
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
    const full = () => new StoreFullError(WHERE, this.maxRuns)
    const chunks: RunInsert[][] = []
    for (let i = 0; i < runs.length; i += INSERT_BATCH)
      chunks.push(runs.slice(i, i + INSERT_BATCH).map((run) => ({ run, fence: undefined })))
    try {
      const answers = await this.#run(
        (sql) =>
          inPipelinedTransaction(sql, (tx) =>
            chunks.map((chunk) => insertRunsPg(tx, this.schema, this.maxRuns, this.leaseMs, chunk, this.#evictions.from)),
          ),
        true,
      )
      for (const rows of answers) this.#evictions.reached(rows[0]?.evicted_to)
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

  /** The fence of the lease held here on the run whose attempt starts `run` as its child, if any. */
  #parentFence(run: RunRecord): Fence | undefined {
    return run.parentRunId === undefined ? undefined : this.#fences.of(run.parentRunId)
  }

  /**
   * A query that yields one row while `fence` is the lease on run `runId`,
   * and none otherwise; with no fence, always one. The row is locked to the end of the statement's
   * transaction with `FOR KEY SHARE`, the lock a step's foreign key takes
   * anyway, which the `FOR UPDATE` of `acquireLease` and
   * `claimOrphanedRuns` waits for (or skips): a claim that moves the fence
   * comes after the write, or the write after the claim, and then sees the
   * fence moved (READ COMMITTED checks a row again that changed while the
   * write waited for it). A cancel or a resume, which move the fence too,
   * take no such lock: what a write that races them leaves (a step of a
   * cancelled run, a deadline timer of a resumed one) changes nothing.
   */
  #leaseRow(sql: Sql | TransactionSql, runId: string, fence: Fence | undefined): Fragment {
    if (fence === undefined) return sql`SELECT 1`
    return sql`
      SELECT 1 FROM ${sql(this.schema)}.runs
      WHERE id = ${runId} AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint
      FOR KEY SHARE`
  }

  /**
   * The reads made while one is in flight go together, in one statement;
   * each is sent after the calls made before it were answered, so it sees
   * what they wrote.
   */
  getRun(id: string): Promise<RunRecord | undefined> {
    return this.#reads.add(id)
  }

  async #getRuns(ids: string[]): Promise<(RunRecord | undefined)[]> {
    return this.#run(async (sql) => {
      const rows = await sql<(Row<RunRecord> & { id: string })[]>`
        SELECT id, ${wholeRecord(sql, this.schema)} AS record FROM ${sql(this.schema)}.runs WHERE id = ANY(${ids}::text[])`
      const byId = new Map(rows.map((row) => [row.id, row.record]))
      return ids.map((id) => byId.get(id))
    })
  }

  /**
   * One row of the statement of run-updates.ts; the calls made while one
   * is in flight go together (`#updateBatch`), and each is answered once
   * they committed.
   */
  async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const fence = expectsRunning(expect) ? this.#fences.of(id) : undefined
    const row = await this.#updates.add({ id, patch, expect, fence })
    // Under the lease the run is running: only a cancel, which moves the
    // fence, changes the status of a running run from outside its attempt.
    if (!row && fence) throw new LeaseLostError(id)
    // The process running a cancelled run's attempt learns of it when it
    // renews its lease (which then fails); waking the processes has them
    // renew now rather than within leaseMs / 3.
    if (row && patch.status === 'cancelled') await this.shared.wake()
    return row
  }

  /**
   * The `updateRun` calls of a batch, in one statement. A statement that
   * fails changed nothing: when it held more than one call, each goes
   * again alone and answers for itself (a string Postgres cannot store).
   */
  #updateBatch(updates: RunUpdate[]): Promise<(RunRecord | undefined | ItemFailure)[]> {
    return togetherOrAlone(updates, async (batch) => {
      let again = false
      const { runs, released } = await this.#run((sql, maybeWritten) => {
        again = maybeWritten
        return updateRunsPg(sql, this.schema, this.leaseMs, batch)
      })
      for (const runId of released) this.#fences.endReleased(runId)
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
    const now = await this.#getRuns(missed.map((update) => update.id))
    const answers = [...runs]
    for (const [j, update] of missed.entries()) {
      const run = now[j]
      if (run === undefined || !showsPatch(run, update.patch)) continue
      answers[batch.indexOf(update)] = run
      if (update.fence !== undefined && isFinished(run.status)) this.#fences.endReleased(update.id)
    }
    return answers
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    const fence = this.#fences.of(runId)
    return this.#run(async (sql) => {
      const rows = await sql`
        UPDATE ${sql(this.schema)}.runs
        SET record = CASE WHEN record->'attempts'->-1 = ${sql.json(attempt as never)}::jsonb THEN record
          ELSE jsonb_set(record, '{attempts}', coalesce(record->'attempts', '[]') || jsonb_build_array(${sql.json(attempt as never)}::jsonb)) END
        WHERE id = ${runId} ${fence ? sql`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint` : sql``}
        RETURNING 1`
      if (rows.length > 0) return
      throw fence ? new LeaseLostError(runId) : new Error(`${WHERE}: unknown run "${runId}"`)
    })
  }

  /**
   * A row of the statement of step-saves.ts; the calls made while one is
   * in flight go together (`#saveBatch`), and each is answered once they
   * committed. Under a lease held here, a save that finds its fence moved
   * on rejects with `LeaseLostError`.
   */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const fence = this.#fences.of(runId)
    try {
      const saved = await this.#saves.add({ runId, key, step, fence })
      if (!saved) throw new LeaseLostError(runId)
    } catch (error) {
      if ((error as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw error
      throw new Error(`${WHERE}: unknown run "${runId}"`, { cause: error })
    }
  }

  /**
   * The `saveStep` calls of a batch, in one statement. A statement that
   * fails wrote nothing: when it held more than one save, each goes again
   * alone and answers for itself (a run the store does not hold).
   */
  #saveBatch(saves: StepSave[]): Promise<(boolean | ItemFailure)[]> {
    return this.#savedEach(saves, (sql, batch) => saveStepsPg(sql, this.schema, batch))
  }

  /**
   * A batch of saves sent in `statement`, which answers the index of each
   * save it wrote (`i`): whether each landed; a failed statement, each
   * alone (`togetherOrAlone`).
   */
  #savedEach<T>(saves: T[], statement: (sql: Sql, batch: T[]) => PendingQuery<{ i: number }[]>): Promise<(boolean | ItemFailure)[]> {
    return togetherOrAlone(saves, async (batch) => {
      const rows = await this.#run((sql) => statement(sql, batch))
      const saved = new Set(rows.map((row) => row.i))
      return batch.map((_, i) => saved.has(i))
    })
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
    const fence = this.#fences.of(runId)
    return this.#run(
      (sql) =>
        inTransaction(sql, async (tx) => {
          const output = await work(stepTransaction(tx, key))
          const schema = tx(this.schema)
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

  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return this.#run(async (sql) => {
      const statuses = query.status === undefined ? null : typeof query.status === 'string' ? [query.status] : [...query.status]
      if (statuses?.length === 0) return []
      // The memory store stops once it holds `limit` runs, so a fractional
      // limit rounds up and 0 or less returns none; LIMIT NULL is no limit.
      const limit = query.limit ?? Infinity
      if (!(limit > 0)) return []
      // seq is the insertion order, as the memory store's Map: newest first,
      // no ties, so a page starts right below the seq of the cursor's run
      // (none when the store does not hold it: the comparison is NULL).
      const runs = sql(this.schema)
      const cursor = query.cursor ?? null
      // Written as `runs_by_event_wait` indexes it (migrations.ts), and only
      // when asked: a condition that a null parameter turns off would keep
      // a generic plan from the index.
      const eventWait =
        query.waitingForEvent === undefined
          ? sql``
          : sql`AND status = 'suspended' AND ${sql.unsafe(EVENT_WAIT_NAME)} = ${query.waitingForEvent}::text`
      const rows = await sql<Row<RunRecord>[]>`
        SELECT ${wholeRecord(sql, this.schema)} AS record FROM ${runs}.runs
        WHERE (${query.taskName ?? null}::text IS NULL OR task_name = ${query.taskName ?? null}::text)
          AND (${statuses}::text[] IS NULL OR status = ANY(${statuses}::text[])) ${eventWait}
          ${query.version === undefined ? sql`` : sql`AND record->>'version' = ${query.version}::text`}
          AND (${cursor}::text IS NULL OR seq < (SELECT seq FROM ${runs}.runs WHERE id = ${cursor}::text))
        ORDER BY seq DESC
        LIMIT ${limit === Infinity ? null : Math.ceil(limit)}::bigint`
      return rows.map((row) => row.record)
    })
  }

  pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    return this.#run((sql) => pruneFinished(sql, this.schema, taskName, before, limit))
  }

  async countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<{ taskName: string; count: number }[]> {
    const statuses = typeof status === 'string' ? [status] : [...status]
    if (statuses.length === 0) return []
    return this.#run(async (sql) => {
      // The status index serves it; no record is read.
      const rows = await sql<{ task_name: string; count: string }[]>`
        SELECT task_name, count(*) AS count FROM ${sql(this.schema)}.runs WHERE status = ANY(${statuses}::text[]) GROUP BY task_name`
      return rows.map((row) => ({ taskName: row.task_name, count: Number(row.count) }))
    })
  }

  /**
   * A row of the statement of timer-saves.ts; the calls made while one is
   * in flight go together, and each is answered once they committed. A
   * timer of an attempt under a lease held here whose fence moved on
   * rejects with `LeaseLostError`.
   */
  async saveTimer(timer: TimerRecord): Promise<void> {
    const fence = ATTEMPT_TIMERS.has(timer.kind) ? this.#fences.of(timer.runId) : undefined
    if (!(await this.#timers.add({ timer, fence }))) throw new LeaseLostError(timer.runId)
  }

  #saveTimers(saves: TimerSave[]): Promise<(boolean | ItemFailure)[]> {
    return this.#savedEach(saves, (sql, batch) => saveTimersPg(sql, this.schema, batch))
  }

  async takeTimer(id: string): Promise<TimerRecord | undefined> {
    return this.#run(async (sql) => {
      // The DELETE is the claim: of two callers, only the one whose statement
      // deleted the row gets it back (the other waits on the row lock, then
      // finds it gone).
      const [row] = await sql<Row<TimerRecord>[]>`DELETE FROM ${sql(this.schema)}.timers WHERE id = ${id} RETURNING record`
      return row?.record
    })
  }

  async dropTimersOf(runId: string): Promise<string[]> {
    return this.#run(async (sql) => {
      const rows = await sql<{ id: string }[]>`DELETE FROM ${sql(this.schema)}.timers WHERE run_id = ${runId} RETURNING id`
      return rows.map((row) => row.id)
    })
  }

  async listTimers(): Promise<TimerRecord[]> {
    return this.#run(async (sql) => {
      const rows = await sql<Row<TimerRecord>[]>`SELECT record FROM ${sql(this.schema)}.timers ORDER BY seq`
      return rows.map((row) => row.record)
    })
  }

  async putToken(token: TokenRecord): Promise<TokenRecord> {
    const fence = this.#fences.of(token.runId)
    return this.#run(async (sql) => {
      const tokens = sql(this.schema)
      // DO NOTHING: a replay must not reset a token that was settled meanwhile.
      const [row] = await sql<{ record: TokenRecord | null; leased: boolean }[]>`
        WITH lease AS (${this.#leaseRow(sql, token.runId, fence)}), inserted AS (
          INSERT INTO ${tokens}.tokens (id, run_id, status, record)
          SELECT ${token.id}, ${token.runId}, ${token.status}, ${sql.json(token as never)}::jsonb FROM lease
          ON CONFLICT (id) DO NOTHING
          RETURNING record
        )
        SELECT coalesce((SELECT record FROM inserted), (SELECT record FROM ${tokens}.tokens WHERE id = ${token.id})) AS record,
          EXISTS (SELECT 1 FROM lease) AS leased`
      if (!row.leased) throw new LeaseLostError(token.runId)
      if (row.record) return row.record
      // The conflicting token was committed after this statement's snapshot
      // was taken, so the statement could not read it; a new one can.
      return (await this.getToken(token.id))!
    })
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    return this.#run(async (sql) => {
      const [row] = await sql<Row<TokenRecord>[]>`SELECT record FROM ${sql(this.schema)}.tokens WHERE id = ${id}`
      return row?.record
    })
  }

  async settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    const change = tokenSettlement(status, payload)
    return this.#run((sql, maybeWritten) => settleTokenPg(sql, this.schema, id, change, maybeWritten))
  }

  /** Flow control: see `RunStore.startQueued`; the transaction is in flow.ts. */
  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    return this.#run((sql) => startQueuedPg(sql, this.schema, this.leaseMs, taskName, limits, now))
  }

  /** Flow control: see `RunStore.debounceRun`; the transaction is in flow.ts. */
  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const fence = this.#parentFence(run)
    // Sent once: a transaction whose answer was lost cannot tell its own insert from another's.
    return this.#run(
      (sql) =>
        debounceRunPg(sql, this.schema, run, keyPath, async (tx) => {
          const [row] = await insertRunsPg(tx, this.schema, this.maxRuns, this.leaseMs, [{ run, fence }], this.#evictions.from)
          this.#evictions.reached(row.evicted_to)
          return this.#answer(run, row)
        }),
      true,
    )
  }

  /** Events: see `RunStore.putEvent`; the statement is in events.ts. */
  async putEvent(event: EventRecord): Promise<{ event: EventRecord; created: boolean }> {
    return this.#run((sql) => putEventPg(sql, this.schema, WHERE, event))
  }

  /** Events: see `RunStore.eventsSince`; the query is in events.ts. */
  async eventsSince(name: string, since: string, limit: number, match?: EventMatch): Promise<EventRecord[]> {
    return this.#run((sql) => eventsSincePg(sql, this.schema, name, since, limit, match))
  }

  /** Events: see `RunStore.listEvents`; the query is in events.ts. */
  async listEvents(query: EventListQuery): Promise<{ events: EventRecord[]; cursor?: string }> {
    return this.#run((sql) => listEventsPg(sql, this.schema, `${WHERE}.listEvents`, query))
  }

  /** Events: see `RunStore.noteEventEffects`; the statement is in events.ts. */
  async noteEventEffects(id: string, effects: EventEffects): Promise<void> {
    return this.#run((sql) => noteEventEffectsPg(sql, this.schema, id, effects))
  }

  /**
   * Runs `query` once the schema is ready, with errors that say what to do.
   * A query that meets a passing fault of the database (transient.ts: a
   * dropped connection, a server restarting, too many clients, a deadlock's
   * victim) goes again after a short wait, up to `RETRY_DELAYS_MS`; then,
   * or at once while the database cannot be reached (availability.ts), the
   * call fails with `StoreUnavailableError`, 503 `STORE_UNAVAILABLE`.
   *
   * Every query sent this way is safe to send again: it reads, it upserts,
   * it claims what lapses if its answer is lost, or its caller tells its
   * own earlier write apart (`#updateBatch`, `createRun`, `settleToken`).
   * `once` sends it once (the app's own work is in it, or a transaction
   * that cannot tell): a passing fault fails the call as unavailable.
   * `query` is told whether an earlier try of the call may have committed
   * (its connection dropped while it was out: `connectionFailed`).
   */
  async #run<T>(query: (sql: Sql, maybeWritten: boolean) => Promise<T>, once = false): Promise<T> {
    await this.#ready
    let maybeWritten = false
    for (let attempt = 0; ; attempt++) {
      const sql = this.#sql
      if (!sql) throw new Error(`${WHERE}: the store for ${redactUrl(this.#url)} is closed`)
      this.#availability.check()
      try {
        return await query(sql, maybeWritten)
      } catch (error) {
        if ((error as { code?: string }).code === UNTRANSLATABLE_CHARACTER) {
          throw new Error(
            `${WHERE}: cannot store a string holding the NUL character (\\u0000): Postgres jsonb has no room for it; ` +
              "strip it from the run's input, result, step outputs and token payloads",
            { cause: error },
          )
        }
        if (!isTransient(error)) throw error
        if (unreachable(error)) this.#availability.lost(error)
        maybeWritten ||= connectionFailed(error) && !unreachable(error)
        if (once || attempt >= RETRY_DELAYS_MS.length || !this.#availability.reachable) {
          throw this.#availability.refusal(error, maybeWritten)
        }
        const wait = RETRY_DELAYS_MS[attempt]
        await new Promise((resolve) => setTimeout(resolve, wait / 2 + (Math.random() * wait) / 2))
      }
    }
  }
}
