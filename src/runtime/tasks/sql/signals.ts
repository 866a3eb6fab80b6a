/**
 * Signals (`RunStore.putSignal`, `takeSignal`, `listSignals`;
 * types/signals.ts) on the SQLite-family run stores: the table, and the
 * operations as procedures (procedure.ts) that each store runs inside its
 * own atomic block. A signal is its JSON `record`, with the columns it is
 * found by; `taken_by` is the token of the wait that took it. Edge-safe.
 */
import type { SignalRecord } from '../../types/signals.ts'
import type { TokenRecord } from '../store/store.ts'
import { receivedSignal } from '../store/signal-records.ts'
import { read, type SqlProcedure, write } from './procedure.ts'
import { settleTokenSql, tokenSql } from './tokens.ts'

/**
 * The signals table. `seq` is the order they were sent in; an id is
 * unique within its run; the signals no wait took are found by run and
 * name, oldest first.
 */
export const SIGNALS_TABLE = `
CREATE TABLE IF NOT EXISTS svc_signals (
  seq INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  taken_by TEXT,
  record TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS svc_signals_by_id ON svc_signals (run_id, id);
CREATE INDEX IF NOT EXISTS svc_signals_untaken ON svc_signals (run_id, name, seq) WHERE taken_by IS NULL;
`

const SELECT_BY_ID = 'SELECT record FROM svc_signals WHERE run_id = ? AND id = ?'
const COUNT_UNTAKEN = 'SELECT count(*) AS n FROM svc_signals WHERE run_id = ? AND taken_by IS NULL'
const INSERT_SIGNAL = 'INSERT INTO svc_signals (run_id, id, name, record) VALUES (?, ?, ?, ?)'
const OLDEST_UNTAKEN = 'SELECT seq, record FROM svc_signals WHERE run_id = ? AND name = ? AND taken_by IS NULL ORDER BY seq LIMIT 1'
const TAKE = 'UPDATE svc_signals SET taken_by = ?, record = ? WHERE seq = ?'
const SELECT_OF_RUN = 'SELECT record FROM svc_signals WHERE run_id = ? ORDER BY seq'

export function* putSignalSql(signal: SignalRecord, maxWaiting: number): SqlProcedure<{ signal: SignalRecord; kept: boolean } | 'full'> {
  const [held] = yield read(SELECT_BY_ID, signal.runId, signal.id)
  if (held) return { signal: JSON.parse(String(held.record)) as SignalRecord, kept: false }
  const [count] = yield read(COUNT_UNTAKEN, signal.runId)
  if (Number(count.n) >= maxWaiting) return 'full'
  yield write(INSERT_SIGNAL, signal.runId, signal.id, signal.name, JSON.stringify(signal))
  return { signal, kept: true }
}

export function* takeSignalSql(tokenId: string, name: string): SqlProcedure<TokenRecord | undefined> {
  const token = yield* tokenSql(tokenId)
  if (token?.status !== 'waiting') return token
  const [row] = yield read(OLDEST_UNTAKEN, token.runId, name)
  if (!row) return token
  const signal = JSON.parse(String(row.record)) as SignalRecord
  yield write(TAKE, tokenId, JSON.stringify({ ...signal, takenBy: tokenId }), row.seq as number)
  const settled = yield* settleTokenSql(tokenId, 'completed', receivedSignal(signal))
  return settled?.token
}

export function* listSignalsSql(runId: string): SqlProcedure<SignalRecord[]> {
  const rows = yield read(SELECT_OF_RUN, runId)
  return rows.map((row) => JSON.parse(String(row.record)) as SignalRecord)
}
