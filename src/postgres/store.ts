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
import postgres, { type Fragment, type Sql, type TransactionSql } from 'postgres'
import { LeaseLostError, StoreFullError } from '../runtime/errors.ts'
import {
  type EventRecord,
  FINISHED_STATUSES,
  hasSteps,
  isFinished,
  type RunPatch,
  type RunQuery,
  type RunStore,
  type TimerKind,
  type TimerRecord,
  type TokenRecord,
  withoutSteps,
} from '../runtime/tasks/store.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import type { EventEffects, EventListQuery } from '../runtime/types/run-store.ts'
import { timerId } from '../runtime/tasks/ids.ts'
import { type Fence, Fences } from './fences.ts'
import { EVENT_WAIT_NAME, migrate } from './migrations.ts'
import { wholeRecord } from './records.ts'
import { pruneFinished } from './retention.ts'
import { inTransaction, stepTransaction } from './transaction.ts'
import { resolvePostgresOptions, type PostgresRunStoreOptions } from './options.ts'
import { redactUrl } from '../runtime/redact.ts'
import { PostgresSharedWork } from './shared.ts'
import { debounceRunPg, startQueuedPg } from './flow.ts'
import { eventsSincePg, listEventsPg, noteEventEffectsPg, putEventPg } from './events.ts'
import type { FlowLimits } from '../runtime/tasks/flow.ts'
import type { StartedRuns } from '../runtime/tasks/store.ts'

export type { PostgresRunStoreOptions } from './options.ts'

const WHERE = 'PostgresRunStore'
// SQLSTATE codes (Postgres manual, appendix A): unique_violation,
// foreign_key_violation (a step of a run the store does not hold), and
// untranslatable_character, which jsonb raises for \u0000 in a string.
const UNIQUE_VIOLATION = '23505'
const FOREIGN_KEY_VIOLATION = '23503'
const UNTRANSLATABLE_CHARACTER = '22P05'
// deadlock_detected, the SQLSTATE of a deadlock's victim.
const DEADLOCK_DETECTED = '40P01'
/** Times a statement chosen as a deadlock's victim is run again before its error stands. */
const DEADLOCK_RETRIES = 5

type Row<T> = { record: T }
type InsertRow = { held: RunRecord | null; inserted: RunRecord | null; leased: boolean }

/** The timers an attempt sets for itself, fenced as its other writes: its retry's backoff, its sleeps' and token waits' deadlines. */
const ATTEMPT_TIMERS: readonly TimerKind[] = ['retry', 'sleep', 'token-timeout']

/**
 * Whether an `updateRun` is an attempt's end: only the run's attempt
 * expects the run `running` and nothing else (completed, failed, retried,
 * suspended). A cancel expects any live status; a resume, `suspended`.
 */
function expectsRunning(expect: { status: RunStatus | readonly RunStatus[] } | undefined): boolean {
  if (expect === undefined) return false
  const { status } = expect
  return typeof status === 'string' ? status === 'running' : status.length === 1 && status[0] === 'running'
}

/**
 * A durable run store in a Postgres database, for `startSvcServer({ store })`
 * or `createTaskRuntime({ store })`:
 *
 * ```ts
 * import { PostgresRunStore } from 'svc/postgres'
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
  /** The fences of the leases this process holds, which its attempts' writes check. */
  readonly #fences = new Fences()

  constructor(options: PostgresRunStoreOptions) {
    const { url, schema, maxRuns, leaseMs, pollMs } = resolvePostgresOptions(options, WHERE)
    this.schema = schema
    this.maxRuns = maxRuns
    this.leaseMs = leaseMs
    this.pollMs = pollMs
    this.#url = url
    const sql = postgres(url, {
      // CREATE … IF NOT EXISTS and friends report skipped work as notices;
      // they are not the application's business.
      onnotice: () => {},
      connection: { application_name: 'svc' },
    })
    this.#sql = sql
    this.#ready = migrate(sql, schema, WHERE).catch((error: unknown) => {
      throw (error as Error).message?.startsWith(WHERE)
        ? error
        : new Error(`${WHERE}: cannot use ${redactUrl(url)}: ${(error as Error).message}`, { cause: error })
    })
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
    await sql.end({ timeout: 5 })
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    const fence = this.#parentFence(run)
    return this.#run(async (sql) => {
      try {
        const [row] = await this.#insert(sql, run, fence)
        if (!row.leased) throw new LeaseLostError(run.parentRunId!)
        if (row.held) return row.held
        if (row.inserted) return row.inserted
        throw new StoreFullError(WHERE, this.maxRuns)
      } catch (error) {
        if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
        if ((error as { constraint_name?: string }).constraint_name === 'runs_by_key') {
          // A finished run (inserted without the lock) raced another holder of its key.
          const [held] = await sql<Row<RunRecord>[]>`
            SELECT ${wholeRecord(sql, this.schema)} AS record FROM ${sql(this.schema)}.runs
            WHERE task_name = ${run.taskName} AND idempotency_key = ${run.idempotencyKey!}`
          if (held) return held.record
        }
        throw new Error(`${WHERE}: run "${run.id}" already exists`, { cause: error })
      }
    })
  }

  /**
   * Every run in one transaction on one connection, its statements
   * pipelined (one round trip's wait, one commit): each answers as
   * `createRun`'s statement does. A finished run of the batch that races
   * another holder of its key aborts the transaction; the runs are then
   * created one by one, which settles that race.
   */
  async createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    const full = () => new StoreFullError(WHERE, this.maxRuns)
    try {
      return await this.#run(
        (sql) =>
          inTransaction(sql, (tx) =>
            Promise.all(
              runs.map(async (run) => {
                const [row] = await this.#insert(tx, run, undefined)
                return row.held ?? row.inserted ?? full()
              }),
            ),
          ),
        true,
      )
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
      return Promise.all(
        runs.map((run) =>
          this.createRun(run).catch((thrown: unknown) => (thrown instanceof StoreFullError ? thrown : Promise.reject(thrown))),
        ),
      )
    }
  }

  /**
   * One statement: answers a held idempotency key with its run, refuses a
   * live run when live runs fill `maxRuns`, inserts, and evicts the runs
   * that finished longest ago (with their tokens, and their steps through
   * the foreign key) past the bound; a delayed run gets its delay timer,
   * and a run given with steps their rows, in the same statement. A child
   * that an attempt starts under `fence` is inserted only while the fence
   * holds (`leased`). The
   * counts come from `run_counts`, locked first: of processes inserting at
   * once, each compares with the count the one before it left. The
   * eviction deletes finished runs of the statement's snapshot; one that
   * another process evicted meanwhile is skipped, and a later insert
   * catches up.
   */
  #insert(sql: Sql | TransactionSql, run: RunRecord, fence: Fence | undefined) {
    const runs = sql(this.schema)
    const finished = isFinished(run.status)
    // A delayed run and its timer are one write: a process that dies right
    // after the insert leaves a run that any process starts when it is due.
    const delay: TimerRecord | undefined =
      run.status === 'scheduled' && run.runAt !== undefined
        ? { id: timerId(run.id, 'delay'), runId: run.id, kind: 'delay', dueAt: run.runAt }
        : undefined
    // A run given with steps (the engine creates runs with none) has their
    // rows inserted in the same statement, and is handed back with them.
    const steps = hasSteps(run) ? sql.json(run.steps as never) : undefined
    const returned = steps ? sql`record || jsonb_build_object('steps', ${steps}::jsonb)` : sql`record`
    const stepRows = steps
      ? sql`inserted_steps AS (
          INSERT INTO ${runs}.steps (run_id, key, record)
          SELECT ${run.id}, step.key, step.value FROM inserted, jsonb_each(${steps}::jsonb) AS step
        ),`
      : sql``
    return sql<InsertRow[]>`
      WITH held AS (
        SELECT ${wholeRecord(sql, this.schema)} AS record FROM ${runs}.runs
        WHERE task_name = ${run.taskName} AND idempotency_key = ${run.idempotencyKey ?? null}
      ), lease AS (
        ${this.#leaseRow(sql, run.parentRunId, fence)}
      ), counts AS (
        SELECT live, total FROM ${runs}.run_counts FOR UPDATE
      ), inserted AS (
        INSERT INTO ${runs}.runs (id, task_name, status, idempotency_key, finished_seq, lease_expires_at, record)
        SELECT ${run.id}, ${run.taskName}, ${run.status}, ${run.idempotencyKey ?? null},
          CASE WHEN ${finished} THEN nextval(${`${this.schema}.runs_finished_seq`}::regclass) END,
          CASE WHEN ${run.status} = 'running' THEN now() + ${this.leaseMs} * interval '1 millisecond' END,
          ${sql.json(withoutSteps(run) as never)}::jsonb
        WHERE NOT EXISTS (SELECT 1 FROM held) AND EXISTS (SELECT 1 FROM lease)
          AND (${finished} OR (SELECT live FROM counts) < ${this.maxRuns})
        RETURNING ${returned} AS record
      ), ${stepRows} delay AS (
        INSERT INTO ${runs}.timers (id, run_id, kind, due_at, record)
        SELECT ${delay?.id ?? null}, ${run.id}, 'delay', ${delay?.dueAt ?? null}::timestamptz, ${sql.json((delay ?? null) as never)}::jsonb
        FROM inserted WHERE ${delay !== undefined}
        ON CONFLICT (id) DO NOTHING
      ), evicted AS (
        DELETE FROM ${runs}.runs WHERE id IN (
          SELECT id FROM ${runs}.runs WHERE finished_seq IS NOT NULL ORDER BY finished_seq
          LIMIT greatest((SELECT total FROM counts) + (SELECT count(*) FROM inserted) - ${this.maxRuns}, 0)
        )
        RETURNING id
      ), evicted_tokens AS (
        DELETE FROM ${runs}.tokens WHERE run_id IN (SELECT id FROM evicted)
      )
      SELECT (SELECT record FROM held) AS held, (SELECT record FROM inserted) AS inserted, EXISTS (SELECT 1 FROM lease) AS leased`
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
  #leaseRow(sql: Sql | TransactionSql, runId: string | undefined, fence: Fence | undefined): Fragment {
    if (fence === undefined) return sql`SELECT 1`
    return sql`
      SELECT 1 FROM ${sql(this.schema)}.runs
      WHERE id = ${runId!} AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint
      FOR KEY SHARE`
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    return this.#run(async (sql) => {
      const [row] = await sql<Row<RunRecord>[]>`
        SELECT ${wholeRecord(sql, this.schema)} AS record FROM ${sql(this.schema)}.runs WHERE id = ${id}`
      return row?.record
    })
  }

  async updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    const fence = expectsRunning(expect) ? this.#fences.of(id) : undefined
    return this.#run(async (sql) => {
      const removed: string[] = []
      const set: Record<string, unknown> = {}
      for (const key in patch) {
        const value = (patch as Record<string, unknown>)[key]
        if (key === 'attempt') continue
        if (value === undefined) removed.push(key)
        else set[key] = value
      }
      // Appended to `attempts` in the same statement (an empty array when there is none).
      const attempts = patch.attempt === undefined ? [] : [patch.attempt]
      const status = typeof patch.status === 'string' ? patch.status : null
      const expected = expect === undefined ? null : typeof expect.status === 'string' ? [expect.status] : [...expect.status]
      // The status check and the write are one statement: the compare-and-set.
      // A run that finishes takes the next eviction position; one that stays
      // finished keeps its own; a live one has none. A run made running (its
      // provisional lease) or cancelled moves its fence on: the attempt of
      // whoever held it before writes nothing more.
      const [row] = await sql<Row<RunRecord>[]>`
        UPDATE ${sql(this.schema)}.runs SET
          record = jsonb_set(
            (record - ${removed}::text[]) || ${sql.json(set as never)}::jsonb,
            '{attempts}', coalesce(record->'attempts', '[]') || ${sql.json(attempts as never)}::jsonb),
          status = coalesce(${status}::text, status),
          finished_seq = CASE WHEN coalesce(${status}::text, status) = ANY(${FINISHED_STATUSES as string[]}::text[])
            THEN coalesce(finished_seq, nextval(${`${this.schema}.runs_finished_seq`}::regclass)) END,
          lease_expires_at = CASE WHEN ${status}::text = 'running' AND status <> 'running'
            THEN now() + ${this.leaseMs} * interval '1 millisecond' ELSE lease_expires_at END,
          lease_fence = CASE WHEN ${status}::text IN ('running', 'cancelled') AND status <> ${status}::text
            THEN lease_fence + 1 ELSE lease_fence END
        WHERE id = ${id} AND (${expected}::text[] IS NULL OR status = ANY(${expected}::text[]))
          ${fence ? sql`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint` : sql``}
        RETURNING ${wholeRecord(sql, this.schema)} AS record`
      // Under the lease the run is running: only a cancel, which moves the
      // fence, changes the status of a running run from outside its attempt.
      if (!row && fence) throw new LeaseLostError(id)
      // The process running a cancelled run's attempt learns of it when it
      // renews its lease (which then fails); waking the processes has them
      // renew now rather than within leaseMs / 3.
      if (row && status === 'cancelled') await this.shared.wake()
      return row?.record
    })
  }

  async appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    const fence = this.#fences.of(runId)
    return this.#run(async (sql) => {
      const rows = await sql`
        UPDATE ${sql(this.schema)}.runs
        SET record = jsonb_set(record, '{attempts}', coalesce(record->'attempts', '[]') || jsonb_build_array(${sql.json(attempt as never)}::jsonb))
        WHERE id = ${runId} ${fence ? sql`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint` : sql``}
        RETURNING 1`
      if (rows.length > 0) return
      throw fence ? new LeaseLostError(runId) : new Error(`${WHERE}: unknown run "${runId}"`)
    })
  }

  /**
   * One row of the steps table, inserted or overwritten; the foreign key
   * refuses a run the store does not hold. Under a lease held here, only
   * while its fence holds, but for the step a suspended run waits on:
   * whoever met the wait records it (`Waitpoints`), lease or not.
   */
  async saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    const fence = this.#fences.of(runId)
    return this.#run(async (sql) => {
      try {
        const steps = sql(this.schema)
        if (fence === undefined) {
          await sql`
            INSERT INTO ${steps}.steps (run_id, key, record) VALUES (${runId}, ${key}, ${sql.json(step as never)}::jsonb)
            ON CONFLICT (run_id, key) DO UPDATE SET record = excluded.record`
          return
        }
        // The lease row of #leaseRow, written out: every step of every
        // attempt comes through here, and a statement built of fragments
        // costs more to assemble.
        const rows = await sql`
          WITH lease AS (
            SELECT 1 FROM ${steps}.runs
            WHERE id = ${runId} AND ((lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint)
              OR (status = 'suspended' AND record #>> '{suspended,stepKey}' = ${key}))
            FOR KEY SHARE
          )
          INSERT INTO ${steps}.steps (run_id, key, record) SELECT ${runId}, ${key}, ${sql.json(step as never)}::jsonb FROM lease
          ON CONFLICT (run_id, key) DO UPDATE SET record = excluded.record
          RETURNING 1`
        if (rows.length === 0) throw new LeaseLostError(runId)
      } catch (error) {
        if ((error as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw error
        throw new Error(`${WHERE}: unknown run "${runId}"`, { cause: error })
      }
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
   * the record to the commit only, not while `work` runs. A failure of any
   * part rolls all of it back, and is not retried here: the attempt fails.
   */
  async transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    const fence = this.#fences.of(runId)
    return this.#run(
      (sql) =>
        inTransaction(sql, async (tx) => {
          const output = await work(stepTransaction(tx, key))
          const schema = tx(this.schema)
          const held = fence === undefined ? tx`` : tx`AND lease_owner = ${fence.owner} AND lease_fence = ${fence.fence}::bigint`
          const rows = await tx`
            WITH lease AS (SELECT 1 FROM ${schema}.runs WHERE id = ${runId} ${held} FOR SHARE)
            INSERT INTO ${schema}.steps (run_id, key, record) SELECT ${runId}, ${key}, ${tx.json(record(output) as never)}::jsonb FROM lease
            ON CONFLICT (run_id, key) DO UPDATE SET record = excluded.record
            RETURNING 1`
          if (rows.length === 0) throw fence === undefined ? new Error(`${WHERE}: unknown run "${runId}"`) : new LeaseLostError(runId)
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

  async saveTimer(timer: TimerRecord): Promise<void> {
    const fence = ATTEMPT_TIMERS.includes(timer.kind) ? this.#fences.of(timer.runId) : undefined
    return this.#run(async (sql) => {
      // An upsert keeps the timer's place in listTimers, as Map#set does.
      const rows = await sql`
        WITH lease AS (${this.#leaseRow(sql, timer.runId, fence)})
        INSERT INTO ${sql(this.schema)}.timers (id, run_id, kind, due_at, record)
        SELECT ${timer.id}, ${timer.runId}, ${timer.kind}, ${timer.dueAt}::timestamptz, ${sql.json(timer as never)}::jsonb FROM lease
        ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, kind = excluded.kind, due_at = excluded.due_at,
          claimed_by = NULL, claim_expires_at = NULL, record = excluded.record
        RETURNING 1`
      if (rows.length === 0) throw new LeaseLostError(timer.runId)
    })
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
    return this.#run(async (sql) => {
      const change: Record<string, unknown> = { status, settledAt: new Date().toISOString() }
      if (status === 'completed' && payload !== undefined) change.payload = payload
      // Only a waiting token moves: the compare-and-set.
      const [row] = await sql<Row<TokenRecord>[]>`
        UPDATE ${sql(this.schema)}.tokens SET status = ${status}, record = record || ${sql.json(change as never)}::jsonb
        WHERE id = ${id} AND status = 'waiting'
        RETURNING record`
      if (row) return { settled: true, token: row.record }
      const token = await this.getToken(id)
      return token && { settled: false, token }
    })
  }

  /** Flow control: see `RunStore.startQueued`; the transaction is in flow.ts. */
  async startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    return this.#run((sql) => startQueuedPg(sql, this.schema, this.leaseMs, taskName, limits, now))
  }

  /** Flow control: see `RunStore.debounceRun`; the transaction is in flow.ts. */
  async debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    const fence = this.#parentFence(run)
    return this.#run((sql) =>
      debounceRunPg(sql, this.schema, run, keyPath, async (tx) => {
        const [row] = await this.#insert(tx, run, fence)
        if (!row.leased) throw new LeaseLostError(run.parentRunId!)
        if (row.held) return row.held
        if (row.inserted) return row.inserted
        throw new StoreFullError(WHERE, this.maxRuns)
      }),
    )
  }

  /** Events: see `RunStore.putEvent`; the statement is in events.ts. */
  async putEvent(event: EventRecord): Promise<{ event: EventRecord; created: boolean }> {
    return this.#run((sql) => putEventPg(sql, this.schema, WHERE, event))
  }

  /** Events: see `RunStore.eventsSince`; the query is in events.ts. */
  async eventsSince(name: string, since: string, limit: number): Promise<EventRecord[]> {
    return this.#run((sql) => eventsSincePg(sql, this.schema, name, since, limit))
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
   * Runs `query` again when Postgres ends it as a deadlock's victim. A run's
   * end (its row, then the `run_counts` row through the trigger) and an
   * insert of the same idempotency key (`run_counts` first, then a wait on
   * the row holding the key) can each wait for the other; Postgres aborts
   * one, whose statement then had no effect, and the other goes on. Every
   * query here is one statement or one transaction, so it is run again whole.
   */
  async #retryingDeadlocks<T>(query: (sql: Sql) => Promise<T>, sql: Sql): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await query(sql)
      } catch (error) {
        if ((error as { code?: string }).code !== DEADLOCK_DETECTED || attempt > DEADLOCK_RETRIES) throw error
      }
    }
  }

  /**
   * Runs `query` once the schema is ready, with errors that say what to do;
   * one a deadlock aborted runs again, unless `once` (the app's own work is
   * in it).
   */
  async #run<T>(query: (sql: Sql) => Promise<T>, once = false): Promise<T> {
    await this.#ready
    const sql = this.#sql
    if (!sql) throw new Error(`${WHERE}: the store for ${redactUrl(this.#url)} is closed`)
    try {
      return await (once ? query(sql) : this.#retryingDeadlocks(query, sql))
    } catch (error) {
      if ((error as { code?: string }).code === UNTRANSLATABLE_CHARACTER) {
        throw new Error(
          `${WHERE}: cannot store a string holding the NUL character (\\u0000): Postgres jsonb has no room for it; ` +
            "strip it from the run's input, result, step outputs and token payloads",
          { cause: error },
        )
      }
      throw error
    }
  }
}
