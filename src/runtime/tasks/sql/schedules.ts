/**
 * Runtime schedules (`RunStore.putSchedule` and the rest, types/schedules.ts)
 * on the SQLite-family run stores: the table, and the operations as
 * procedures (procedure.ts) that each store runs inside its own atomic
 * block. A schedule is its JSON `record`, with the columns it is found by.
 * Edge-safe: no `node:` import.
 */
import type { ScheduleQuery, ScheduleRecord } from '../../types/schedules.ts'
import { read, type SqlProcedure, write } from './procedure.ts'

/**
 * The schedules table: schema version 14 of the dialect. `seq` is the
 * order they were made; a schedule's key is unique within its task.
 */
export const SCHEDULES_TABLE = `
CREATE TABLE IF NOT EXISTS svc_schedules (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  task TEXT NOT NULL,
  key TEXT,
  record TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS svc_schedules_by_key ON svc_schedules (task, key) WHERE key IS NOT NULL;
`

const SELECT_SCHEDULE = 'SELECT record FROM svc_schedules WHERE id = ?'
const SELECT_KEYED = 'SELECT record FROM svc_schedules WHERE task = ? AND key = ?'
const UPSERT_SCHEDULE =
  'INSERT INTO svc_schedules (id, task, key, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET record = excluded.record'
const DELETE_SCHEDULE = 'DELETE FROM svc_schedules WHERE id = ? RETURNING seq'

/** `putSchedule`: with a key another schedule of the task holds, that one changes, keeping its id and creation. */
export function* putScheduleSql(schedule: ScheduleRecord): SqlProcedure<ScheduleRecord> {
  let kept = schedule
  if (schedule.key !== undefined) {
    const [held] = yield read(SELECT_KEYED, schedule.task, schedule.key)
    const previous = held === undefined ? undefined : (JSON.parse(String(held.record)) as ScheduleRecord)
    if (previous && previous.id !== schedule.id) kept = { ...schedule, id: previous.id, createdAt: previous.createdAt }
  }
  yield write(UPSERT_SCHEDULE, kept.id, kept.task, kept.key ?? null, JSON.stringify(kept))
  return kept
}

export function* getScheduleSql(id: string): SqlProcedure<ScheduleRecord | undefined> {
  const [row] = yield read(SELECT_SCHEDULE, id)
  return row === undefined ? undefined : (JSON.parse(String(row.record)) as ScheduleRecord)
}

export function* listSchedulesSql(query: ScheduleQuery): SqlProcedure<ScheduleRecord[]> {
  const where: string[] = []
  const params: string[] = []
  if (query.task !== undefined) {
    where.push('task = ?')
    params.push(query.task)
  }
  if (query.key !== undefined) {
    where.push('key = ?')
    params.push(query.key)
  }
  const rows = yield read(`SELECT record FROM svc_schedules${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq`, ...params)
  return rows.map((row) => JSON.parse(String(row.record)) as ScheduleRecord)
}

export function* deleteScheduleSql(id: string): SqlProcedure<boolean> {
  // RETURNING through a read: a write answers no rows.
  return (yield read(DELETE_SCHEDULE, id)).length > 0
}
