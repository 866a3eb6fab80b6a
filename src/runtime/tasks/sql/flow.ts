/**
 * Flow control on the tables of `schema.ts`, shared by the two SQLite run
 * stores: each calls these inside its own atomic block (the Node store's
 * write transaction, the Durable Object's `transactionSync`), so the reads
 * and the writes cannot be split by another caller. Edge-safe.
 */
import type { RunRecord } from '../../types.ts'
import { type FlowLimits, flowKey, planStarts, startedRun } from '../flow.ts'
import type { StartedRuns } from '../store.ts'
import { type RunRow, SELECT_QUEUED_AND_RUNNING, SELECT_SCHEDULED, SELECT_STARTED_SINCE, UPDATE_RUN, UPDATE_RUN_RECORD } from './queries.ts'
import { rowText, wholeText } from './record-text.ts'

/** How a store runs one statement: `all` reads rows, `run` writes. */
export interface SqlRunner {
  all(query: string, ...params: (string | number | null)[]): Record<string, unknown>[]
  run(query: string, ...params: (string | number | null)[]): void
}

/** A run row as written, with the whole record's text: for a store that caches rows. */
export interface WrittenRow {
  id: string
  row: RunRow
}

/** `RunStore.startQueued` on the SQL tables; `written` lists the rows it changed. */
export function startQueuedSql(
  sql: SqlRunner,
  taskName: string,
  limits: FlowLimits,
  now: string,
): { result: StartedRuns; written: WrittenRow[] } {
  const rows = sql.all(SELECT_QUEUED_AND_RUNNING, taskName) as unknown as RunRow[]
  const runs = rows.map((row) => JSON.parse(row.record) as RunRecord)
  const nowMs = Date.parse(now)
  const started = limits.rateLimit
    ? sql
        .all(SELECT_STARTED_SINCE, taskName, new Date(nowMs - limits.rateLimit.periodSeconds * 1000).toISOString())
        .map((row) => JSON.parse(row.record as string) as RunRecord)
    : []
  const plan = planStarts(
    limits,
    runs.filter((run) => run.status === 'queued'),
    runs.filter((run) => run.status === 'running'),
    started,
    nowMs,
  )
  const seqs = new Map(runs.map((run, i) => [run.id, Number(rows[i].seq)]))
  const result: StartedRuns = { started: [] }
  const written: WrittenRow[] = []
  for (const run of plan.start) {
    const next = startedRun(run, now)
    const record = rowText(next)
    const seq = seqs.get(run.id)!
    sql.run(UPDATE_RUN, next.status, null, record, seq)
    written.push({ id: run.id, row: { seq, record: wholeText(next, record), finished_seq: null } })
    result.started.push(next)
  }
  if (plan.wake) result.wake = plan.wake
  return { result, written }
}

/**
 * The part of `RunStore.debounceRun` that joins a scheduled run: the
 * joined run and its row, or `undefined` when none has `run`'s key (the
 * store then inserts `run`, in the same atomic block).
 */
export function joinScheduledSql(
  sql: SqlRunner,
  run: RunRecord,
  keyPath: string | undefined,
): { joined: RunRecord; written: WrittenRow } | undefined {
  const key = flowKey(run.input, keyPath)
  for (const row of sql.all(SELECT_SCHEDULED, run.taskName) as unknown as RunRow[]) {
    const waiting = JSON.parse(row.record) as RunRecord
    if (flowKey(waiting.input, keyPath) !== key) continue
    waiting.input = run.input
    waiting.runAt = run.runAt
    const record = rowText(waiting)
    sql.run(UPDATE_RUN_RECORD, record, row.seq)
    const whole = wholeText(waiting, record)
    return { joined: waiting, written: { id: waiting.id, row: { seq: Number(row.seq), record: whole, finished_seq: row.finished_seq } } }
  }
  return undefined
}
