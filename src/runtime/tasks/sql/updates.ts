/**
 * Updates (`RunStore.putUpdate`, `answerUpdate`, `getUpdate`,
 * `listUpdates`; types/updates.ts) on the SQLite-family run stores: the
 * table, and the operations as procedures (procedure.ts) that each store
 * runs inside its own atomic block. An update is its columns
 * (`updateFromColumns`, store/update-records.ts); `seq` is its place among
 * its run's updates. Edge-safe.
 */
import type { UpdateAnswer, UpdateRecord } from '../../types/updates.ts'
import { jsonCopy } from '../base/json-copy.ts'
import { answerColumn, answeredUpdate, jsonColumn, pendingUpdate, updateFromColumns } from '../store/update-records.ts'
import { read, type SqlProcedure, write } from './procedure.ts'

/**
 * The updates table: schema version 18 of the dialect. An id is unique
 * within its run; a run's updates are found in the order they were sent,
 * and its pending ones by an index of their own.
 */
export const UPDATES_TABLE = `
CREATE TABLE IF NOT EXISTS svc_updates (
  run_id TEXT NOT NULL,
  id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  data TEXT,
  sent_at TEXT NOT NULL,
  status TEXT NOT NULL,
  answer TEXT,
  PRIMARY KEY (run_id, id)
);
CREATE INDEX IF NOT EXISTS svc_updates_by_run ON svc_updates (run_id, seq);
CREATE INDEX IF NOT EXISTS svc_updates_pending ON svc_updates (run_id, seq) WHERE status = 'pending';
`

const COLUMNS = 'run_id, id, name, data, sent_at, status, answer'
const SELECT_BY_ID = `SELECT ${COLUMNS} FROM svc_updates WHERE run_id = ? AND id = ?`
const COUNT_PENDING = "SELECT count(*) AS n FROM svc_updates WHERE run_id = ? AND status = 'pending'"
// Its place follows the run's last update: one probe of `svc_updates_by_run`.
const INSERT_UPDATE = `INSERT INTO svc_updates (run_id, id, seq, name, data, sent_at, status)
  VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM svc_updates WHERE run_id = ?), ?, ?, ?, 'pending')`
const ANSWER = "UPDATE svc_updates SET status = ?, answer = ? WHERE run_id = ? AND id = ? AND status = 'pending'"
const SELECT_OF_RUN = `SELECT ${COLUMNS} FROM svc_updates WHERE run_id = ? ORDER BY seq`
const SELECT_PENDING_OF_RUN = `SELECT ${COLUMNS} FROM svc_updates WHERE run_id = ? AND status = 'pending' ORDER BY seq`

export function* putUpdateSql(update: UpdateRecord, maxPending: number): SqlProcedure<{ update: UpdateRecord; kept: boolean } | 'full'> {
  const [held] = yield read(SELECT_BY_ID, update.runId, update.id)
  if (held) return { update: updateFromColumns(held), kept: false }
  const [count] = yield read(COUNT_PENDING, update.runId)
  if (Number(count.n) >= maxPending) return 'full'
  const kept = jsonCopy(pendingUpdate(update))
  yield write(INSERT_UPDATE, kept.runId, kept.id, kept.runId, kept.name, jsonColumn(kept.data), kept.sentAt)
  return { update: kept, kept: true }
}

export function* answerUpdateSql(runId: string, id: string, answer: UpdateAnswer): SqlProcedure<UpdateRecord | undefined> {
  const [held] = yield read(SELECT_BY_ID, runId, id)
  if (!held) return undefined
  const update = updateFromColumns(held)
  if (update.status !== 'pending') return update
  const answered = jsonCopy(answeredUpdate(update, answer))
  yield write(ANSWER, answered.status, answerColumn(answered), runId, id)
  return answered
}

export function* getUpdateSql(runId: string, id: string): SqlProcedure<UpdateRecord | undefined> {
  const [row] = yield read(SELECT_BY_ID, runId, id)
  return row && updateFromColumns(row)
}

export function* listUpdatesSql(runId: string, options: { pending?: boolean } = {}): SqlProcedure<UpdateRecord[]> {
  const rows = yield read(options.pending ? SELECT_PENDING_OF_RUN : SELECT_OF_RUN, runId)
  return rows.map(updateFromColumns)
}
