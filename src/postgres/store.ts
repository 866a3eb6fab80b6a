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
 * (run-updates.ts), reading it, and taking its lease (shared.ts); and the
 * calls every sent event makes: recording it and noting what its send did
 * (event-writes.ts), and reading the runs waiting on it
 * (event-wait-reads.ts). The first call goes at once; the calls made
 * while it is in flight go together in one statement, each row of it
 * doing what the call would do alone, and each call is answered once that
 * statement committed. Under
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
 * waited step of a suspended run) resumes the run whoever met it. *
 * The class is the front of parts that each do one job, and share the
 * client and the fences through connection.ts: run-creates.ts,
 * run-reads.ts, run-patches.ts (updates and attempts), step-writes.ts,
 * timer-calls.ts, token-calls.ts and event-writes.ts.
 */
import type { StoreFullError } from '../runtime/errors.ts'
import type { EventMatch } from '../runtime/events/match.ts'
import type { FlowLimits } from '../runtime/tasks/flow/flow.ts'
import type { EventRecord, RunPatch, RunQuery, RunStore, StartedRuns, TimerRecord, TokenRecord } from '../runtime/tasks/store/store.ts'
import type { EventEffects, EventListQuery, StoreLifecycle } from '../runtime/types/run-store.ts'
import type { Attempt, RunRecord, RunStatus, StepRecord } from '../types.ts'
import { PostgresConnection, WHERE } from './connection.ts'
import { EventWrites } from './event-writes.ts'
import { eventsSincePg, listEventsPg } from './events.ts'
import { deleteSchedulePg, getSchedulePg, listSchedulesPg, putSchedulePg } from './schedules.ts'
import type { ScheduleQuery, ScheduleRecord } from '../runtime/types/schedules.ts'
import { startQueuedPg } from './flow.ts'
import { resolvePostgresOptions, type PostgresRunStoreOptions } from './options.ts'
import { pruneFinished } from './retention.ts'
import { RunCreates } from './run-creates.ts'
import { RunPatches } from './run-patches.ts'
import { RunReads } from './run-reads.ts'
import { PostgresSharedWork } from './shared.ts'
import { StepWrites } from './step-writes.ts'
import { TimerCalls } from './timer-calls.ts'
import { getTokenPg, putTokenPg, settleTokenCall } from './token-calls.ts'
import { listSignalsPg, putSignalPg, takeSignalPg } from './signals.ts'
import type { SignalRecord } from '../runtime/types/signals.ts'
import { answerUpdatePg, getUpdatePg, listUpdatesPg, putUpdatePg } from './updates.ts'
import type { UpdateAnswer, UpdateRecord } from '../runtime/types/updates.ts'

export type { PostgresRunStoreOptions } from './options.ts'

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
export class PostgresRunStore implements RunStore, StoreLifecycle {
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
  /** The client, the schema's readiness, retries and the fences held here (connection.ts). */
  readonly #conn: PostgresConnection
  readonly #reads: RunReads
  readonly #creates: RunCreates
  readonly #patches: RunPatches
  readonly #steps: StepWrites
  readonly #timers: TimerCalls
  readonly #events: EventWrites

  constructor(options: PostgresRunStoreOptions) {
    const { url, schema, maxRuns, leaseMs, pollMs, connectTimeoutMs, logger } = resolvePostgresOptions(options, WHERE)
    this.schema = schema
    this.maxRuns = maxRuns
    this.leaseMs = leaseMs
    this.pollMs = pollMs
    const conn = new PostgresConnection({ url, schema, maxRuns, leaseMs, connectTimeoutMs, logger })
    this.#conn = conn
    this.shared = new PostgresSharedWork({ schema, leaseMs, pollMs, fences: conn.fences, run: (query) => conn.run(query) })
    this.#reads = new RunReads(conn)
    this.#creates = new RunCreates(conn)
    this.#patches = new RunPatches(conn, { getRuns: (ids) => this.#reads.getRuns(ids), wake: () => this.shared.wake() })
    this.#steps = new StepWrites(conn)
    this.#timers = new TimerCalls(conn)
    this.#events = new EventWrites(conn, WHERE)
  }

  /**
   * Resolves once the tables exist at this release's version; rejects with
   * the reason they cannot (unreachable database, bad credentials, a schema
   * that a newer svc migrated).
   */
  ready(): Promise<void> {
    return this.#conn.ready()
  }

  /** How many runs the database holds, finished ones included. */
  size(): Promise<number> {
    return this.#reads.count()
  }

  /** Closes the connections, letting running queries finish. Later calls on the store reject. Idempotent. */
  close(): Promise<void> {
    // The last run changes go out first: the engine publishes them after the writes that made them.
    return this.#conn.close(() => this.shared.closeChanges())
  }

  /** Group-committed with the other creates in flight (run-creates.ts). */
  createRun(run: RunRecord, leaseOwner?: string): Promise<RunRecord> {
    return this.#creates.createRun(run, leaseOwner)
  }

  /** Every run in one transaction (run-creates.ts). */
  createRuns(runs: readonly RunRecord[]): Promise<(RunRecord | StoreFullError)[]> {
    return this.#creates.createRuns(runs)
  }

  /** Read together with the other reads in flight (run-reads.ts). */
  getRun(id: string): Promise<RunRecord | undefined> {
    return this.#reads.getRun(id)
  }

  /** Group-committed with the other updates in flight, fenced under a lease held here (run-patches.ts). */
  updateRun(id: string, patch: RunPatch, expect?: { status: RunStatus | readonly RunStatus[] }): Promise<RunRecord | undefined> {
    return this.#patches.updateRun(id, patch, expect)
  }

  appendAttempt(runId: string, attempt: Attempt): Promise<void> {
    return this.#patches.appendAttempt(runId, attempt)
  }

  /** Group-committed with the other saves in flight, fenced under a lease held here (step-writes.ts). */
  saveStep(runId: string, key: string, step: StepRecord): Promise<void> {
    return this.#steps.saveStep(runId, key, step)
  }

  /** `ctx.step.transaction`: one Postgres transaction with the step's record in it (step-writes.ts). */
  transactStep<T>(runId: string, key: string, work: (tx: unknown) => T | Promise<T>, record: (output: T) => StepRecord): Promise<T> {
    return this.#steps.transactStep(runId, key, work, record)
  }

  listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return this.#reads.listRuns(query)
  }

  pruneFinished(taskName: string, before: string, limit: number): Promise<number> {
    return this.#conn.run((sql) => pruneFinished(sql, this.schema, taskName, before, limit))
  }

  countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<{ taskName: string; count: number }[]> {
    return this.#reads.countRunsByTask(status)
  }

  /** Group-committed with the other timers in flight (timer-calls.ts). */
  saveTimer(timer: TimerRecord): Promise<void> {
    return this.#timers.saveTimer(timer)
  }

  takeTimer(id: string): Promise<TimerRecord | undefined> {
    return this.#timers.takeTimer(id)
  }

  dropTimersOf(runId: string): Promise<string[]> {
    return this.#timers.dropTimersOf(runId)
  }

  listTimers(): Promise<TimerRecord[]> {
    return this.#timers.listTimers()
  }

  /** Fenced under a lease held here on its run (token-calls.ts). */
  putToken(token: TokenRecord): Promise<TokenRecord> {
    return putTokenPg(this.#conn, token)
  }

  getToken(id: string): Promise<TokenRecord | undefined> {
    return getTokenPg(this.#conn, id)
  }

  settleToken(
    id: string,
    status: 'completed' | 'timed_out',
    payload?: unknown,
  ): Promise<{ settled: boolean; token: TokenRecord } | undefined> {
    return settleTokenCall(this.#conn, id, status, payload)
  }

  /** Flow control: see `RunStore.startQueued`; the transaction is in flow.ts. */
  startQueued(taskName: string, limits: FlowLimits, now: string): Promise<StartedRuns> {
    return this.#conn.run((sql) => startQueuedPg(sql, this.schema, this.leaseMs, taskName, limits, now))
  }

  /** Flow control: see `RunStore.debounceRun`; the transaction is in flow.ts (run-creates.ts). */
  debounceRun(run: RunRecord, keyPath: string | undefined): Promise<RunRecord> {
    return this.#creates.debounceRun(run, keyPath)
  }

  /** Events: see `RunStore.putEvent`; group-committed with the other puts in flight (event-writes.ts). */
  putEvent(event: EventRecord): Promise<{ event: EventRecord; created: boolean }> {
    return this.#events.putEvent(event)
  }

  /** Events: see `RunStore.eventsSince`; the query is in events.ts. */
  eventsSince(name: string, since: string, limit: number, match?: EventMatch): Promise<EventRecord[]> {
    return this.#conn.run((sql) => eventsSincePg(sql, this.schema, name, since, limit, match))
  }

  /** Events: see `RunStore.listEvents`; the query is in events.ts. */
  listEvents(query: EventListQuery): Promise<{ events: EventRecord[]; cursor?: string }> {
    return this.#conn.run((sql) => listEventsPg(sql, this.schema, `${WHERE}.listEvents`, query))
  }

  /** Events: see `RunStore.noteEventEffects`; group-committed with the other notes in flight (event-writes.ts). */
  noteEventEffects(id: string, effects: EventEffects): Promise<void> {
    return this.#events.noteEventEffects(id, effects)
  }

  /** Runtime schedules: see `ScheduleStore`; the statements are in schedules.ts. */
  putSchedule(schedule: ScheduleRecord): Promise<ScheduleRecord> {
    return this.#conn.run((sql) => putSchedulePg(sql, this.schema, schedule))
  }

  getSchedule(id: string): Promise<ScheduleRecord | undefined> {
    return this.#conn.run((sql) => getSchedulePg(sql, this.schema, id))
  }

  listSchedules(query: ScheduleQuery): Promise<ScheduleRecord[]> {
    return this.#conn.run((sql) => listSchedulesPg(sql, this.schema, query))
  }

  deleteSchedule(id: string): Promise<boolean> {
    return this.#conn.run((sql) => deleteSchedulePg(sql, this.schema, id))
  }

  /** Signals: see `RunStore.putSignal`; the statements are in signals.ts. */
  putSignal(signal: SignalRecord, maxWaiting: number): Promise<{ signal: SignalRecord; kept: boolean } | 'full'> {
    return putSignalPg(this.#conn, signal, maxWaiting)
  }

  takeSignal(tokenId: string, name: string): Promise<TokenRecord | undefined> {
    return takeSignalPg(this.#conn, tokenId, name)
  }

  listSignals(runId: string): Promise<SignalRecord[]> {
    return listSignalsPg(this.#conn, runId)
  }

  /** Updates: see `RunStore.putUpdate`; the statements are in updates.ts. */
  putUpdate(update: UpdateRecord, maxPending: number): Promise<{ update: UpdateRecord; kept: boolean } | 'full'> {
    return putUpdatePg(this.#conn, update, maxPending)
  }

  answerUpdate(runId: string, id: string, answer: UpdateAnswer): Promise<UpdateRecord | undefined> {
    return answerUpdatePg(this.#conn, runId, id, answer)
  }

  getUpdate(runId: string, id: string): Promise<UpdateRecord | undefined> {
    return getUpdatePg(this.#conn, runId, id)
  }

  listUpdates(runId: string, options?: { pending?: boolean }): Promise<UpdateRecord[]> {
    return listUpdatesPg(this.#conn, runId, options)
  }
}
