/**
 * Runtime schedules (`RunStore.putSchedule` and the rest, types/schedules.ts)
 * on Postgres: the `schedules` table of schema version 15. A keyed schedule
 * is written by its task and key in one statement, so of processes racing
 * to make one, one row results and each answers with it.
 */
import type { Sql } from 'postgres'
import type { ScheduleQuery, ScheduleRecord } from '../runtime/types/schedules.ts'

type Row = { record: ScheduleRecord }

export async function putSchedulePg(sql: Sql, schema: string, schedule: ScheduleRecord): Promise<ScheduleRecord> {
  const table = sql`${sql(schema)}.schedules`
  const record = sql.json(schedule as never)
  if (schedule.key === undefined) {
    const [row] = await sql<Row[]>`
      INSERT INTO ${table} (id, task, key, record) VALUES (${schedule.id}, ${schedule.task}, NULL, ${record})
      ON CONFLICT (id) DO UPDATE SET record = excluded.record RETURNING record`
    return row.record
  }
  // A key held by another schedule of the task: that one changes, keeping its id and creation.
  const [row] = await sql<Row[]>`
    INSERT INTO ${table} (id, task, key, record) VALUES (${schedule.id}, ${schedule.task}, ${schedule.key}, ${record})
    ON CONFLICT (task, key) WHERE key IS NOT NULL DO UPDATE
      SET record = excluded.record || jsonb_build_object('id', schedules.id, 'createdAt', schedules.record->'createdAt')
    RETURNING record`
  return row.record
}

export async function getSchedulePg(sql: Sql, schema: string, id: string): Promise<ScheduleRecord | undefined> {
  const [row] = await sql<Row[]>`SELECT record FROM ${sql(schema)}.schedules WHERE id = ${id}`
  return row?.record
}

export async function listSchedulesPg(sql: Sql, schema: string, query: ScheduleQuery): Promise<ScheduleRecord[]> {
  const rows = await sql<Row[]>`
    SELECT record FROM ${sql(schema)}.schedules
    WHERE (${query.task ?? null}::text IS NULL OR task = ${query.task ?? null})
      AND (${query.key ?? null}::text IS NULL OR key = ${query.key ?? null})
    ORDER BY seq`
  return rows.map((row) => row.record)
}

export async function deleteSchedulePg(sql: Sql, schema: string, id: string): Promise<boolean> {
  const rows = await sql`DELETE FROM ${sql(schema)}.schedules WHERE id = ${id} RETURNING seq`
  return rows.length > 0
}
