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
 * The choice reads runs' rows without their steps (status, times, input are
 * all it looks at); the runs handed back are read whole (records.ts).
 */
import { inTransaction } from './transaction.ts'
import type { Sql } from 'postgres'
import type { RunRecord } from '../types.ts'
import { type FlowLimits, flowKey, planStarts } from '../runtime/tasks/flow.ts'
import type { StartedRuns } from '../runtime/tasks/store.ts'
import { wholeRecord } from './records.ts'

type Row = { record: RunRecord }

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
    // Every queued run, not the first few by priority: an old run of a low
    // priority may outweigh them all once it has aged (flow.ts `byPriority`).
    const live = await tx<Row[]>`
      SELECT record FROM ${runs}.runs WHERE task_name = ${taskName} AND status IN ('queued', 'running') ORDER BY seq`
    const records = live.map((row) => row.record)
    const nowMs = Date.parse(now)
    const since = limits.rateLimit ? new Date(nowMs - limits.rateLimit.periodSeconds * 1000).toISOString() : null
    // ISO timestamps compare in time order as text.
    const started =
      since === null
        ? []
        : await tx<Row[]>`
      SELECT record FROM ${runs}.runs WHERE task_name = ${taskName} AND record->>'startedAt' > ${since}`
    const plan = planStarts(
      limits,
      records.filter((run) => run.status === 'queued'),
      records.filter((run) => run.status === 'running'),
      started.map((row) => row.record),
      nowMs,
    )
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
