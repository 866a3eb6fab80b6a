/**
 * Updates (`RunStore.putUpdate`, `answerUpdate`, `getUpdate`,
 * `listUpdates`; types/updates.ts) on Postgres, on the `updates` table
 * (update-table.ts). A put is one transaction under a lock of its run's
 * updates, so of puts racing on one run each counts the pending updates the
 * others kept, and the bound holds. An answer is one statement that sets it
 * on a pending update only, so an update is answered once whoever answers
 * it. Each call is safe to send again after a dropped connection: a put
 * finds its update by id, an answer finds its update answered.
 */
import type { Sql } from 'postgres'
import { jsonCopy } from '../runtime/tasks/base/json-copy.ts'
import { answerColumn, jsonColumn, pendingUpdate, updateFromColumns } from '../runtime/tasks/store/update-records.ts'
import type { UpdateAnswer, UpdateRecord } from '../runtime/types/updates.ts'
import type { PostgresConnection } from './connection.ts'
import { inTransaction, holdRunLock } from './transaction.ts'

/**
 * The columns `updateFromColumns` reads, `data` and `answer` as their JSON
 * text (NULL stays NULL, JSON null is `null`). They are written as text
 * cast in the statement: a parameter the driver takes for `jsonb` it
 * encodes as JSON again.
 */
const columns = (sql: Sql) => sql`run_id, id, name, data::text AS data, sent_at, status, answer::text AS answer`

export function putUpdatePg(
  conn: PostgresConnection,
  update: UpdateRecord,
  maxPending: number,
): Promise<{ update: UpdateRecord; kept: boolean } | 'full'> {
  return conn.run((sql) =>
    inTransaction(sql, async (tx) => {
      const updates = tx`${tx(conn.schema)}.updates`
      // Held to the commit: the next put on the run counts what this one kept.
      await holdRunLock(tx, conn.schema, 'updates', update.runId)
      const held = async () => {
        const [row] = await tx`SELECT ${columns(tx)} FROM ${updates} WHERE run_id = ${update.runId} AND id = ${update.id}`
        return row && updateFromColumns(row)
      }
      const before = await held()
      if (before) return { update: before, kept: false }
      const [{ n }] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM ${updates} WHERE run_id = ${update.runId} AND status = 'pending'`
      if (n >= maxPending) return 'full'
      const kept = jsonCopy(pendingUpdate(update))
      const [row] = await tx`
        INSERT INTO ${updates} (run_id, id, name, data, sent_at, status)
        VALUES (${kept.runId}, ${kept.id}, ${kept.name}, ${jsonColumn(kept.data)}::text::jsonb, ${kept.sentAt}, 'pending')
        ON CONFLICT (run_id, id) DO NOTHING RETURNING ${columns(tx)}`
      // Under the lock no other put of the id comes between; were its row there, it is the update held.
      return row ? { update: updateFromColumns(row), kept: true } : { update: (await held())!, kept: false }
    }),
  )
}

export function answerUpdatePg(
  conn: PostgresConnection,
  runId: string,
  id: string,
  answer: UpdateAnswer,
): Promise<UpdateRecord | undefined> {
  const text = answerColumn(answer)
  return conn.run(async (sql) => {
    const updates = sql`${sql(conn.schema)}.updates`
    const [answered] = await sql`
      UPDATE ${updates} SET status = ${answer.status}, answer = ${text}::text::jsonb
      WHERE run_id = ${runId} AND id = ${id} AND status = 'pending' RETURNING ${columns(sql)}`
    if (answered) return updateFromColumns(answered)
    // Answered before, or never sent.
    const [held] = await sql`SELECT ${columns(sql)} FROM ${updates} WHERE run_id = ${runId} AND id = ${id}`
    return held && updateFromColumns(held)
  })
}

export function getUpdatePg(conn: PostgresConnection, runId: string, id: string): Promise<UpdateRecord | undefined> {
  return conn.run(async (sql) => {
    const [row] = await sql`SELECT ${columns(sql)} FROM ${sql(conn.schema)}.updates WHERE run_id = ${runId} AND id = ${id}`
    return row && updateFromColumns(row)
  })
}

export function listUpdatesPg(conn: PostgresConnection, runId: string, options: { pending?: boolean } = {}): Promise<UpdateRecord[]> {
  return conn.run(async (sql) => {
    const pending = options.pending ? sql`AND status = 'pending'` : sql``
    const rows = await sql`SELECT ${columns(sql)} FROM ${sql(conn.schema)}.updates WHERE run_id = ${runId} ${pending} ORDER BY seq`
    return rows.map((row) => updateFromColumns(row))
  })
}
