/**
 * Tokens (`RunStore.getToken`, `settleToken`) on the SQLite-family run
 * stores, as procedures (procedure.ts) each store runs in its own atomic
 * block. The record is kept whole as JSON; `status` beside it is what a
 * settle compares. Edge-safe: no `node:` import.
 */
import { settleTokenRecord, type TokenRecord } from '../store/store.ts'
import { isoNowOf, systemClock } from '../base/clock.ts'
import { read, type SqlProcedure, write } from './procedure.ts'
import { SELECT_TOKEN, SETTLE_TOKEN } from './queries.ts'

/** The token `id`, or undefined when the store holds none. */
export function* tokenSql(id: string): SqlProcedure<TokenRecord | undefined> {
  const [row] = yield read(SELECT_TOKEN, id)
  return row && (JSON.parse(row.record as string) as TokenRecord)
}

/**
 * Settles token `id` once: a waiting token takes `status` and `payload`
 * (`settled: true`), stamped `at` (the store's own time); one already
 * settled is answered as it is.
 */
export function* settleTokenSql(
  id: string,
  status: 'completed' | 'timed_out',
  payload: unknown,
  at: string = isoNowOf(systemClock),
): SqlProcedure<{ settled: boolean; token: TokenRecord } | undefined> {
  const token = yield* tokenSql(id)
  if (!token) return undefined
  if (token.status !== 'waiting') return { settled: false, token }
  settleTokenRecord(token, status, payload, at)
  const record = JSON.stringify(token)
  yield write(SETTLE_TOKEN, status, record, id)
  return { settled: true, token: JSON.parse(record) as TokenRecord }
}
