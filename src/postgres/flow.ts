/**
 * Flow control on Postgres (`RunStore.startQueued` and `debounceRun` of
 * `PostgresRunStore`). Each is one transaction that first takes a
 * transaction-scoped advisory lock on (schema, task, purpose): every
 * process that starts queued runs of a task, or joins a trigger to one of
 * its scheduled runs, waits for the one before it, then reads what that
 * one committed. Nothing else moves a run of a limited task into
 * `running` (the engine makes its runs `queued`, and only `startQueued`
 * starts them), so counting inside the lock cannot undercount; runs that
 * stop running meanwhile only leave a slot that the process which stopped
 * them asks for next. `planStarts` (flow.ts) makes the choice, as in every
 * store.
 *
 * The choice reads what it weighs of each run (times, priority, and input
 * for a limit per key); the runs handed back are read whole (records.ts).
 */
import { inTransaction } from './transaction.ts'
import type { Sql } from 'postgres'
import type { RunRecord } from '../types.ts'
import { type FlowLimits, type FlowRun, flowKey, placesFor, planStarts } from '../runtime/tasks/flow/flow.ts'
import { DEFAULT_PRIORITY_AGING } from '../runtime/rules.ts'
import type { StartedRuns } from '../runtime/tasks/store/store.ts'
import { wholeRecord } from './records.ts'

type Row = { record: RunRecord }

/** What `planStarts` weighs of a run, as its row's columns. */
interface FlowRow {
  id: string
  created_at: string
  run_at: string | null
  started_at: string | null
  priority: number | null
  input?: unknown
}

/** The columns of a `FlowRow`: the input only when a limit is per key (`keyed`), as only then is it weighed. */
function flowColumns(tx: Sql, keyed: boolean) {
  return tx`id, record->>'createdAt' AS created_at, record->>'runAt' AS run_at, record->>'startedAt' AS started_at,
    (record->>'priority')::int AS priority ${keyed ? tx`, record->'input' AS input` : tx``}`
}

/**
 * A queued run's priority, and when it became due (ISO text, which sorts
 * as time): the expressions of the index `runs_queued_by_weight` (schema
 * version 14, migrations.ts), written there the same way.
 */
const PRIORITY = `coalesce((record->>'priority')::int, 0)`
const DUE = `coalesce(record->>'runAt', record->>'createdAt')`

/**
 * A queued run's weight at `now`, as `byPriority` (flow.ts) weighs it: its
 * priority, plus `aging` points a second it has waited since it was due.
 * The flow store contract holds the two to the same choices.
 */
function weight(tx: Sql, aging: number | false, now: string) {
  if (aging === false) return tx.unsafe(PRIORITY)
  return tx`${tx.unsafe(PRIORITY)} + ${aging}::float8 *
    greatest(0, extract(epoch from ${now}::timestamptz - (${tx.unsafe(DUE)})::timestamptz))::float8`
}

/**
 * The `places` heaviest queued runs of `taskName` at `now`, read through
 * `runs_queued_by_weight` without reading the rest of the queue. Of runs
 * of one priority, the one due first weighs most (with aging; strictly,
 * the first created), so the heaviest are among the first `places` of
 * each priority: one descent of the index finds each priority present,
 * one more its first runs, and only those are weighed.
 */
function heaviestQueued(tx: Sql, schema: string, taskName: string, places: number, aging: number | false, now: string) {
  const runs = tx(schema)
  const priority = tx.unsafe(PRIORITY)
  return tx<FlowRow[]>`
    WITH RECURSIVE levels (p) AS (
      (SELECT ${priority} FROM ${runs}.runs WHERE task_name = ${taskName} AND status = 'queued' ORDER BY 1 DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT ${priority} FROM ${runs}.runs
        WHERE task_name = ${taskName} AND status = 'queued' AND ${priority} < levels.p ORDER BY 1 DESC LIMIT 1)
      FROM levels WHERE levels.p IS NOT NULL
    )
    SELECT first.* FROM levels, LATERAL (
      SELECT ${flowColumns(tx, false)}, seq, ${weight(tx, aging, now)} AS weight FROM ${runs}.runs
      WHERE task_name = ${taskName} AND status = 'queued' AND ${priority} = levels.p
      ORDER BY ${aging === false ? tx`seq` : tx`${tx.unsafe(DUE)}, seq`} LIMIT ${places}
    ) first
    WHERE levels.p IS NOT NULL
    ORDER BY first.weight DESC, first.seq LIMIT ${places}`
}

function flowRun(row: FlowRow): FlowRun {
  // Without a limit per key, the input is not weighed, nor read.
  const run: FlowRun = { id: row.id, createdAt: row.created_at, input: row.input }
  if (row.run_at !== null) run.runAt = row.run_at
  if (row.started_at !== null) run.startedAt = row.started_at
  if (row.priority !== null) run.priority = row.priority
  return run
}

/** Takes the advisory lock of (schema, task, purpose) until the transaction ends. */
async function lock(tx: Sql, schema: string, taskName: string, purpose: 'start' | 'debounce'): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`${schema}/${purpose}/${taskName}`}, 0))`
}

/**
 * Starts the queued runs of `taskName` that its limits allow at `now`.
 * A started run gets the provisional lease of a run made `running`
 * (`leaseMs`), so no other process takes it for an orphan before the
 * starter acquires it; like every claim, it moves the run's fence on
 * (fences.ts).
 */
export function startQueuedPg(
  sql: Sql,
  schema: string,
  leaseMs: number,
  taskName: string,
  limits: FlowLimits,
  now: string,
): Promise<StartedRuns> {
  return inTransaction(sql, async (tx) => {
    await lock(tx, schema, taskName, 'start')
    const runs = tx(schema)
    const keyed = limits.concurrency?.key !== undefined || limits.rateLimit?.key !== undefined
    const running = await tx<FlowRow[]>`
      SELECT ${flowColumns(tx, keyed)} FROM ${runs}.runs WHERE task_name = ${taskName} AND status = 'running'`
    // A full slot is the common answer (each trigger of the task asks), and
    // needs no read of the queue. Without keys only the runs that could
    // start are read, weighed in the database: a queue of thousands is not
    // read at each start. With keys, every queued run: an old run of a low
    // priority may outweigh them all once it has aged.
    const places = placesFor(limits, running.length)
    if (places === 0) return { started: [] }
    const queued =
      places === undefined
        ? await tx<FlowRow[]>`
      SELECT ${flowColumns(tx, keyed)} FROM ${runs}.runs WHERE task_name = ${taskName} AND status = 'queued' ORDER BY seq`
        : await heaviestQueued(tx, schema, taskName, places, limits.priorityAging ?? DEFAULT_PRIORITY_AGING, now)
    const nowMs = Date.parse(now)
    const since = limits.rateLimit ? new Date(nowMs - limits.rateLimit.periodSeconds * 1000).toISOString() : null
    // ISO timestamps compare in time order as text.
    const started =
      since === null
        ? []
        : await tx<FlowRow[]>`
      SELECT ${flowColumns(tx, keyed)} FROM ${runs}.runs WHERE task_name = ${taskName} AND record->>'startedAt' > ${since}`
    const plan = planStarts(limits, queued.map(flowRun), running.map(flowRun), started.map(flowRun), nowMs)
    const result: StartedRuns = { started: [] }
    if (plan.wake) result.wake = plan.wake
    if (plan.start.length === 0) return result
    const ids = plan.start.map((run) => run.id)
    const rows = await tx<Row[]>`
      UPDATE ${runs}.runs SET
        status = 'running',
        lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
        lease_fence = lease_fence + 1,
        record = record || jsonb_build_object('status', 'running', 'startedAt', coalesce(record->'startedAt', to_jsonb(${now}::text)))
      WHERE id = ANY(${ids}::text[]) AND status = 'queued'
      RETURNING ${wholeRecord(tx, schema)} AS record`
    // In the order planned.
    const byId = new Map(rows.map((row) => [row.record.id, row.record]))
    result.started = ids.flatMap((id) => byId.get(id) ?? [])
    return result
  })
}

/**
 * Joins `run` to a scheduled run of its task with the same key, or inserts
 * it through `insert` (the store's `createRun` statement), in one
 * transaction under the task's debounce lock.
 */
export function debounceRunPg(
  sql: Sql,
  schema: string,
  run: RunRecord,
  keyPath: string | undefined,
  insert: (tx: Sql) => Promise<RunRecord>,
): Promise<RunRecord> {
  return inTransaction(sql, async (tx) => {
    await lock(tx, schema, run.taskName, 'debounce')
    const runs = tx(schema)
    if (run.idempotencyKey !== undefined) {
      const [held] = await tx`SELECT 1 FROM ${runs}.runs WHERE task_name = ${run.taskName} AND idempotency_key = ${run.idempotencyKey}`
      if (held) return insert(tx)
    }
    const key = flowKey(run.input, keyPath)
    const scheduled = await tx<Row[]>`
      SELECT record FROM ${runs}.runs WHERE task_name = ${run.taskName} AND status = 'scheduled' ORDER BY seq`
    for (const { record } of scheduled) {
      if (flowKey(record.input, keyPath) !== key) continue
      const change = { input: run.input ?? null, runAt: run.runAt }
      // Unless its delay ran out meanwhile: then it is no longer one to join.
      const [joined] = await tx<Row[]>`
        UPDATE ${runs}.runs SET record = record || ${tx.json(change as never)}::jsonb
        WHERE id = ${record.id} AND status = 'scheduled'
        RETURNING ${wholeRecord(tx, schema)} AS record`
      if (joined) return joined.record
    }
    return insert(tx)
  })
}
