/**
 * Flow control on the tables of `schema.ts`, shared by the SQLite-family
 * run stores as procedures (procedure.ts): each store runs them inside its
 * own atomic block (the Node store's write transaction, the Durable
 * Object's `transactionSync`, an async store's transaction), so the reads
 * and the writes cannot be split by another caller. Edge-safe.
 */
import type { RunRecord } from '../../types.ts'
import { type FlowLimits, flowKey, mayBeFull, placesFor, planStarts, startedRun } from '../flow/flow.ts'
import type { StartedRuns } from '../store/store.ts'
import { read, type SqlProcedure, type SqlRows, type SqlStatement, write } from './procedure.ts'
import {
  COUNT_RUNNING,
  type RunRow,
  SELECT_QUEUED_AND_RUNNING,
  SELECT_SCHEDULED,
  SELECT_STARTED_SINCE,
  UPDATE_RUN,
  UPDATE_RUN_RECORD,
} from './queries.ts'
import { rowText, wholeText } from './record-text.ts'

/** A run row as written, with the whole record's text: for a store that caches rows. */
export interface WrittenRow {
  id: string
  row: RunRow
}

/** What `startQueuedSql` resolves to: the store's answer, and the rows it changed. */
export interface QueuedStarts {
  result: StartedRuns
  written: WrittenRow[]
}

/** What a procedure hands back when it read nothing. */
const NO_ROWS: SqlRows = []

/**
 * `RunStore.startQueued` on the SQL tables: two reads, then one write per
 * run it starts. The choice between them is `planQueuedStarts`, a plain
 * function, so that the procedure itself does no more than hand statements
 * over.
 */
export function* startQueuedSql(taskName: string, limits: FlowLimits, now: string): SqlProcedure<QueuedStarts> {
  if (mayBeFull(limits)) {
    // A full shared slot is the common answer (each trigger of the task asks): counted, without reading the queue.
    const [{ running }] = yield read(COUNT_RUNNING, taskName)
    if (placesFor(limits, Number(running)) === 0) return { result: { started: [] }, written: [] }
  }
  // Every queued run, not the first few by priority: an old run of a low
  // priority may outweigh them all once it has aged (flow.ts `byPriority`).
  const rows = (yield read(SELECT_QUEUED_AND_RUNNING, taskName)) as unknown as RunRow[]
  const nowMs = Date.parse(now)
  const since = limits.rateLimit && new Date(nowMs - limits.rateLimit.periodSeconds * 1000).toISOString()
  const started = since ? yield read(SELECT_STARTED_SINCE, taskName, since) : NO_ROWS
  const starts = planQueuedStarts(rows, started, limits, now, nowMs)
  for (const statement of starts.writes) yield statement
  return starts
}

/**
 * Of a task's queued and running rows (creation order) and its rows started
 * within the rate limit's window, the runs `planStarts` lets start at
 * `now`, and the statements that start them.
 */
function planQueuedStarts(
  rows: RunRow[],
  startedRows: SqlRows,
  limits: FlowLimits,
  now: string,
  nowMs: number,
): QueuedStarts & { writes: SqlStatement[] } {
  const runs = rows.map((row) => JSON.parse(row.record) as RunRecord)
  const plan = planStarts(
    limits,
    runs.filter((run) => run.status === 'queued'),
    runs.filter((run) => run.status === 'running'),
    startedRows.map((row) => JSON.parse(row.record as string) as RunRecord),
    nowMs,
  )
  const seqs = new Map(runs.map((run, i) => [run.id, Number(rows[i].seq)]))
  const result: StartedRuns = { started: [] }
  const written: WrittenRow[] = []
  const writes: SqlStatement[] = []
  for (const run of plan.start) {
    const next = startedRun(run, now)
    const record = rowText(next)
    const seq = seqs.get(run.id)!
    writes.push(write(UPDATE_RUN, next.status, null, record, seq))
    written.push({ id: run.id, row: { seq, record: wholeText(next, record), finished_seq: null } })
    result.started.push(next)
  }
  if (plan.wake) result.wake = plan.wake
  return { result, written, writes }
}

/** What `joinScheduledSql` resolves to when `run` joined a scheduled run. */
export interface ScheduledJoin {
  joined: RunRecord
  written: WrittenRow
}

/**
 * The part of `RunStore.debounceRun` that joins a scheduled run: the
 * joined run and its row, or `undefined` when none has `run`'s key (the
 * store then inserts `run`, in the same atomic block).
 */
export function* joinScheduledSql(run: RunRecord, keyPath: string | undefined): SqlProcedure<ScheduledJoin | undefined> {
  const join = scheduledJoin((yield read(SELECT_SCHEDULED, run.taskName)) as unknown as RunRow[], run, keyPath)
  if (!join) return undefined
  yield join.write
  return join
}

/** Of a task's scheduled rows (creation order), the first that holds `run`'s key, joined, and the statement that writes it. */
function scheduledJoin(rows: RunRow[], run: RunRecord, keyPath: string | undefined): (ScheduledJoin & { write: SqlStatement }) | undefined {
  const key = flowKey(run.input, keyPath)
  for (const row of rows) {
    const waiting = JSON.parse(row.record) as RunRecord
    if (flowKey(waiting.input, keyPath) !== key) continue
    waiting.input = run.input
    waiting.runAt = run.runAt
    const record = rowText(waiting)
    const whole = wholeText(waiting, record)
    return {
      joined: waiting,
      written: { id: waiting.id, row: { seq: Number(row.seq), record: whole, finished_seq: row.finished_seq } },
      write: write(UPDATE_RUN_RECORD, record, row.seq),
    }
  }
  return undefined
}
