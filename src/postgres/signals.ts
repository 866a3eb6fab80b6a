/**
 * Signals (`RunStore.putSignal`, `takeSignal`, `listSignals`;
 * types/signals.ts) on Postgres, on the `signals` table (signal-table.ts). A
 * take is one transaction that locks the wait's token, takes the oldest
 * signal of its name that no wait took (skipping one another take holds)
 * and settles the token with it, so a signal goes to one wait at most and
 * a wait that timed out takes none. Each call is safe to send again after
 * a dropped connection: a put finds its signal by id, a take finds its
 * token settled.
 */
import type { TokenRecord } from '../runtime/tasks/store/store.ts'
import { receivedSignal } from '../runtime/tasks/store/signal-records.ts'
import type { SignalRecord } from '../runtime/types/signals.ts'
import type { PostgresConnection } from './connection.ts'
import { tokenSettlement } from './tokens.ts'
import { holdRunLock, inTransaction } from './transaction.ts'

type Row<T> = { record: T }

export function putSignalPg(
  conn: PostgresConnection,
  signal: SignalRecord,
  maxWaiting: number,
): Promise<{ signal: SignalRecord; kept: boolean } | 'full'> {
  return conn.run((sql) =>
    inTransaction(sql, async (tx) => {
      const signals = tx`${tx(conn.schema)}.signals`
      // Held to the commit: the next put on the run counts what this one kept.
      await holdRunLock(tx, conn.schema, 'signals', signal.runId)
      const held = async () => {
        const [row] = await tx<Row<SignalRecord>[]>`SELECT record FROM ${signals} WHERE run_id = ${signal.runId} AND id = ${signal.id}`
        return row?.record
      }
      const before = await held()
      if (before) return { signal: before, kept: false }
      const [{ n }] = await tx<{ n: number }[]>`
        SELECT count(*)::int AS n FROM ${signals} WHERE run_id = ${signal.runId} AND taken_by IS NULL`
      if (n >= maxWaiting) return 'full'
      const [row] = await tx<Row<SignalRecord>[]>`
        INSERT INTO ${signals} (run_id, id, name, record)
        VALUES (${signal.runId}, ${signal.id}, ${signal.name}, ${tx.json(signal as never)}::jsonb)
        ON CONFLICT (run_id, id) DO NOTHING RETURNING record`
      // Under the lock no other put of the id comes between; were its row there, it is the signal held.
      return row ? { signal: row.record, kept: true } : { signal: (await held())!, kept: false }
    }),
  )
}

export function takeSignalPg(conn: PostgresConnection, tokenId: string, name: string): Promise<TokenRecord | undefined> {
  return conn.run((sql) =>
    inTransaction(sql, async (tx) => {
      const schema = tx(conn.schema)
      const [held] = await tx<Row<TokenRecord>[]>`SELECT record FROM ${schema}.tokens WHERE id = ${tokenId} FOR UPDATE`
      const token = held?.record
      if (token?.status !== 'waiting') return token
      const [pick] = await tx<(Row<SignalRecord> & { seq: string })[]>`
        SELECT seq, record FROM ${schema}.signals
        WHERE run_id = ${token.runId} AND name = ${name} AND taken_by IS NULL
        ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`
      if (!pick) return token
      await tx`
        UPDATE ${schema}.signals SET taken_by = ${tokenId}, record = record || ${tx.json({ takenBy: tokenId })}::jsonb
        WHERE seq = ${pick.seq}`
      const change = tokenSettlement('completed', receivedSignal(pick.record))
      const [settled] = await tx<Row<TokenRecord>[]>`
        UPDATE ${schema}.tokens SET status = 'completed', record = record || ${tx.json(change as never)}::jsonb
        WHERE id = ${tokenId} RETURNING record`
      return settled.record
    }),
  )
}

export function listSignalsPg(conn: PostgresConnection, runId: string): Promise<SignalRecord[]> {
  return conn.run(async (sql) => {
    const rows = await sql<Row<SignalRecord>[]>`SELECT record FROM ${sql(conn.schema)}.signals WHERE run_id = ${runId} ORDER BY seq`
    return rows.map((row) => row.record)
  })
}
