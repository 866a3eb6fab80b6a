/**
 * The statements the two SQLite run stores share, on the tables of
 * `schema.ts`, and the `listRuns` and `countRunsByTask` queries. Each store
 * runs them its own way: `SqliteRunStore` prepares them once and batches
 * writes, `DurableObjectRunStore` runs them in synchronous blocks.
 * Edge-safe: no `node:` import.
 */
import type { RunRecord, RunStatus } from '../../../types.ts'
import { isFinished, type RunQuery } from '../store/store.ts'
import { searchConditions } from './search.ts'
import { searches } from '../store/run-search.ts'

/** The run columns a read-modify-write needs: `seq` (the rowid) addresses the update. */
export interface RunRow {
  seq: number
  record: string
  finished_seq: number | null
}

/**
 * Whole run records: each row of `runs` with the run's steps put back in
 * place from the steps table (schema.ts, STEPS_TABLE), in the order they
 * were first saved. A subquery rather than a view: SQLite flattens it into
 * each statement that reads from it, so the id, task and status indexes
 * still serve, and the database holds nothing an older SQLite could not
 * read (an aggregate's ORDER BY needs SQLite 3.44; node:sqlite has it from
 * Node 22.13, and workerd has it).
 */
// The subquery's object is wrapped in json() so json_set embeds it as JSON:
// SQLite 3.54 (Bun's) hands a subquery's JSON back as text, which json_set
// would then store as one string.
const RUN_RECORDS = `(SELECT seq, id, task_name, status, idempotency_key, finished_seq, created_at, json_set(record, '$.steps', json((
  SELECT json_group_object(key, json(svc_steps.record) ORDER BY svc_steps.seq) FROM svc_steps WHERE svc_steps.run_seq = svc_runs.seq
))) AS record FROM svc_runs)`

export const SELECT_RUN = `SELECT seq, record, finished_seq FROM ${RUN_RECORDS} WHERE id = ?`

// The event a suspended run waits for, as `runs_by_event_wait` indexes it:
// a query must write the same expression for the index to serve it.
const EVENT_WAIT_NAME = "json_extract(record, '$.suspended.waitpoint.name')"

/**
 * The suspended runs that wait for an event, by its name
 * (`RunQuery.waitingForEvent`): SQLite schema version 9, and what a Durable
 * Object creates on every wake. Only event waitpoints have a `name`.
 */
export const RUNS_BY_EVENT_WAIT = `
CREATE INDEX IF NOT EXISTS svc_runs_by_event_wait ON svc_runs (${EVENT_WAIT_NAME}, seq) WHERE status = 'suspended';
`
/**
 * Whether any run waits for an event of a name: one probe of
 * `runs_by_event_wait`. Most sends meet no wait, and this costs a small
 * part of what the list of `listRunsQuery` costs when it finds no row.
 */
export const ANY_EVENT_WAIT = `SELECT 1 FROM svc_runs WHERE status = 'suspended' AND ${EVENT_WAIT_NAME} = ? LIMIT 1`

/**
 * Each task's finished runs in the order they finished, for retention
 * (`RunStore.pruneFinished`): SQLite schema version 11, and what a Durable
 * Object creates on every wake.
 */
export const RUNS_BY_TASK_FINISH = `
CREATE INDEX IF NOT EXISTS svc_runs_by_task_finish ON svc_runs (task_name, finished_seq) WHERE finished_seq IS NOT NULL;
`
export const SELECT_RUN_BY_KEY = `SELECT record FROM ${RUN_RECORDS} WHERE task_name = ? AND idempotency_key = ?`
export const SELECT_RUN_SEQ = 'SELECT seq FROM svc_runs WHERE id = ?'

export const RUN_EXISTS = 'SELECT 1 FROM svc_runs WHERE id = ?'
/** The columns a run's row is inserted with, in the order of `insertRunValues`. */
export const RUN_COLUMNS = 'id, task_name, status, idempotency_key, finished_seq, record, created_at'
export const INSERT_RUN = `INSERT INTO svc_runs (${RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`
/** The values of `RUN_COLUMNS` for `run`, whose row holds `record`. */
export function insertRunValues(
  run: RunRecord,
  finishSeq: number | null,
  record: string,
): [string, string, string, string | null, number | null, string, string] {
  return [run.id, run.taskName, run.status, run.idempotencyKey ?? null, finishSeq, record, run.createdAt]
}
/** What `UPDATE_RUN` sets, for a store whose update sets more. */
export const RUN_UPDATE_SET = 'status = ?, finished_seq = ?, record = ?'
// By rowid, which the row carries: one b-tree lookup instead of two.
export const UPDATE_RUN = `UPDATE svc_runs SET ${RUN_UPDATE_SET} WHERE seq = ?`
export const UPDATE_RUN_RECORD = 'UPDATE svc_runs SET record = ? WHERE seq = ?'
export const COUNT_RUNS = 'SELECT count(*) AS total, count(*) - count(finished_seq) AS live FROM svc_runs'
export const LAST_FINISHED_SEQ = 'SELECT max(finished_seq) AS n FROM svc_runs WHERE finished_seq IS NOT NULL'

// Flow control (flow.ts): a task's queued and running runs in creation
// order, its runs that first started after a moment (ISO text compares in
// time order), and its scheduled runs, which a debounced trigger may join.
export const COUNT_RUNNING = "SELECT count(*) AS running FROM svc_runs WHERE task_name = ? AND status = 'running'"
export const SELECT_QUEUED_AND_RUNNING = `SELECT seq, record, finished_seq FROM ${RUN_RECORDS} WHERE task_name = ? AND status IN ('queued', 'running') ORDER BY seq`
export const SELECT_STARTED_SINCE = "SELECT record FROM svc_runs WHERE task_name = ? AND json_extract(record, '$.startedAt') > ?"
export const SELECT_SCHEDULED = `SELECT seq, record, finished_seq FROM ${RUN_RECORDS} WHERE task_name = ? AND status = 'scheduled' ORDER BY seq`

// Eviction takes the runs that finished longest ago; the one parameter is how many.
const oldestFinished = (column: 'id' | 'seq') =>
  `SELECT ${column} FROM svc_runs WHERE finished_seq IS NOT NULL ORDER BY finished_seq LIMIT ?`
const OLDEST_FINISHED = /* @__PURE__ */ oldestFinished('id')
/**
 * What goes with the runs `EVICT_RUNS` deletes, run before it: their
 * tokens, signals, updates and steps.
 */
export const EVICT_WITH_RUNS = [
  `DELETE FROM svc_tokens WHERE run_id IN (${OLDEST_FINISHED})`,
  `DELETE FROM svc_signals WHERE run_id IN (${OLDEST_FINISHED})`,
  `DELETE FROM svc_updates WHERE run_id IN (${OLDEST_FINISHED})`,
  `DELETE FROM svc_steps WHERE run_seq IN (${/* @__PURE__ */ oldestFinished('seq')})`,
]
// Idempotency keys live on the run's row, so they go with it.
export const EVICT_RUNS = `DELETE FROM svc_runs WHERE id IN (${OLDEST_FINISHED})`

// Retention takes, of a task's `limit` runs that finished first, the ones
// that finished before a moment (ISO text compares in time order); the
// parameters are the task, the limit and the moment. The statements
// run in one write, so they see the same runs.
const expiredRuns = (column: 'id' | 'seq') =>
  `SELECT ${column} FROM (SELECT ${column}, record FROM svc_runs WHERE task_name = ? AND finished_seq IS NOT NULL ORDER BY finished_seq LIMIT ?) WHERE json_extract(record, '$.finishedAt') < ?`
/** What goes with the runs `PRUNE_RUNS` deletes, run before it: their tokens, signals, updates and steps. */
export const PRUNE_WITH_RUNS = [
  `DELETE FROM svc_tokens WHERE run_id IN (${/* @__PURE__ */ expiredRuns('id')})`,
  `DELETE FROM svc_signals WHERE run_id IN (${/* @__PURE__ */ expiredRuns('id')})`,
  `DELETE FROM svc_updates WHERE run_id IN (${/* @__PURE__ */ expiredRuns('id')})`,
  `DELETE FROM svc_steps WHERE run_seq IN (${/* @__PURE__ */ expiredRuns('seq')})`,
]
export const PRUNE_RUNS = `DELETE FROM svc_runs WHERE seq IN (${/* @__PURE__ */ expiredRuns('seq')}) RETURNING id`

// An upsert keeps the timer's place in listTimers, as Map#set does.
export const UPSERT_TIMER =
  'INSERT INTO svc_timers (id, run_id, record) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, record = excluded.record'
/** `UPSERT_TIMER` for tables created with `timerDueAt` (see `schema.ts`): the due time comes third. */
export const UPSERT_TIMER_WITH_DUE_AT =
  'INSERT INTO svc_timers (id, run_id, due_at, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, due_at = excluded.due_at, record = excluded.record'
// DELETE … RETURNING is the claim: of two callers, only the one whose statement deleted the row gets it.
export const TAKE_TIMER = 'DELETE FROM svc_timers WHERE id = ? RETURNING record'
/** Every timer of a run (a cancelled run's), their ids returned. */
export const DROP_RUN_TIMERS = 'DELETE FROM svc_timers WHERE run_id = ? RETURNING id'
export const LIST_TIMERS = 'SELECT record FROM svc_timers ORDER BY seq'

// A step saved again keeps its row, so its place among the run's steps, as
// an object keeps a key assigned again.
export const UPSERT_STEP =
  'INSERT INTO svc_steps (run_seq, key, record) VALUES (?, ?, ?) ON CONFLICT (run_seq, key) DO UPDATE SET record = excluded.record'

// DO NOTHING: a replay must not reset a token that was settled meanwhile.
export const INSERT_TOKEN = 'INSERT INTO svc_tokens (id, run_id, status, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING'
export const SELECT_TOKEN = 'SELECT record FROM svc_tokens WHERE id = ?'
export const SETTLE_TOKEN = 'UPDATE svc_tokens SET status = ?, record = ? WHERE id = ?'

/**
 * The statement and parameters that answer `countRunsByTask(status)`, with
 * rows `{ task_name, count }`, or `undefined` for an empty status list.
 * The status index serves it; no record is read.
 */
export function countRunsByTaskQuery(status: RunStatus | readonly RunStatus[]): { text: string; params: string[] } | undefined {
  const statuses: readonly RunStatus[] = typeof status === 'string' ? [status] : status
  if (statuses.length === 0) return undefined
  const text = `SELECT task_name, count(*) AS count FROM svc_runs WHERE status IN (${statuses.map(() => '?').join(', ')}) GROUP BY task_name`
  return { text, params: [...statuses] }
}

/**
 * The `SELECT record` statement and its parameters that answer `query`, or
 * `undefined` when no run can match (an empty status list, a limit of 0 or
 * less). By `seq`, newest first and after the cursor's run; by `id` (the
 * order every tasks object of a sharded worker shares), newest first and
 * below the cursor's id.
 */
export function listRunsQuery(query: RunQuery, order: 'seq' | 'id' = 'seq'): { text: string; params: (string | number)[] } | undefined {
  const where: string[] = []
  const params: (string | number)[] = []
  if (query.taskName !== undefined) {
    where.push('task_name = ?')
    params.push(query.taskName)
  }
  const statuses: readonly RunStatus[] | undefined = typeof query.status === 'string' ? [query.status] : query.status
  if (statuses?.length === 0) return undefined
  if (query.waitingForEvent !== undefined) {
    // Only suspended runs wait. On the table itself, where
    // `runs_by_event_wait` serves it; the list of seqs then drives lookups
    // by primary key (a status condition beside it would have the status
    // index drive them instead, for about a tenth more per call).
    if (statuses !== undefined && !statuses.includes('suspended')) return undefined
    where.push(`seq IN (SELECT seq FROM svc_runs WHERE status = 'suspended' AND ${EVENT_WAIT_NAME} = ?)`)
    params.push(query.waitingForEvent)
  } else if (statuses !== undefined) {
    where.push(`status IN (${statuses.map(() => '?').join(', ')})`)
    params.push(...statuses)
  }
  if (query.version !== undefined) {
    where.push("json_extract(record, '$.version') = ?")
    params.push(query.version)
  }
  searchConditions(query, where, params)
  // A window of creation times pages in creation order (search.ts), which its index serves.
  const byCreation = order === 'seq' && (query.from !== undefined || query.to !== undefined)
  if (query.cursor !== undefined) {
    // A cursor the table does not hold makes the comparison NULL: no row, as in the memory store.
    // By id, any id is a place in the order, held here or not.
    where.push(
      order === 'id'
        ? 'id < ?'
        : byCreation
          ? '(created_at, seq) < (SELECT created_at, seq FROM svc_runs WHERE id = ?)'
          : 'seq < (SELECT seq FROM svc_runs WHERE id = ?)',
    )
    params.push(query.cursor)
  }
  // The memory store stops once it holds `limit` runs, so a fractional
  // limit rounds up and 0 or less returns none; -1 is SQLite's "no limit".
  const limit = query.limit ?? Infinity
  if (!(limit > 0)) return undefined
  params.push(limit === Infinity ? -1 : Math.ceil(limit))
  const filter = where.length === 0 ? '' : `WHERE ${where.join(' AND ')} `
  // seq is the insertion order, as the memory store's Map: newest first, no ties.
  const orderBy = byCreation ? 'created_at DESC, seq DESC' : `${order} DESC`
  if (!searches(query)) return { text: `SELECT record FROM ${RUN_RECORDS} ${filter}ORDER BY ${orderBy} LIMIT ?`, params }
  // A search picks its page on the runs table alone, then builds the
  // records of that page only: building one (its steps gathered) costs far
  // more than the test of a row that may not match.
  const page = `SELECT seq FROM svc_runs ${filter}ORDER BY ${orderBy} LIMIT ?`
  return { text: `SELECT record FROM ${RUN_RECORDS} WHERE seq IN (${page}) ORDER BY ${orderBy}`, params }
}

/**
 * The eviction position (`finished_seq`) of a run in `status`: kept while it
 * stays finished, `next()` when it has just finished, none while it is live
 * (live runs are never evicted). Each store counts `next` its own way.
 */
export function finishSeqOf(status: RunStatus, current: number | null, next: () => number): number | null {
  if (!isFinished(status)) return null
  return current ?? next()
}
