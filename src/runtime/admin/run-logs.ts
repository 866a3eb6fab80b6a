/**
 * `GET /__tasks/runs/<id>/logs?after=<seq>&limit=<n>`: the entries a run
 * logged with `ctx.log` (run-logs.ts), oldest first, a page at a time:
 *
 * 200 `{ id, taskName, status, entries, dropped, cursor? }`: the kept
 * entries whose `seq` is over `after` (default 0), at most `limit`
 * (default 100, at most 1,000). `cursor`, when present, is the `after` of
 * the next page: more entries are kept past this one. `dropped` counts the
 * entries the run no longer keeps. To follow a run, ask again with `after`
 * set to the last `seq` seen until its status is finished and no entry is
 * left. 404 `RUN_NOT_FOUND`; 400 `INVALID_QUERY` for a bad parameter.
 */
import type { RunLogEntry, RunRecord } from '../types.ts'
import { checkParameters, InvalidQueryError, limitParameter, oneParameter } from './runs-query.ts'

/** The page size of a run's logs when none is asked for. */
export const DEFAULT_LOGS_LIMIT = 100
/** The largest page of a run's logs. */
export const MAX_LOGS_LIMIT = 1000

const PARAMETERS = new Set(['after', 'limit'])

/** What a page of a run's logs holds. */
export interface RunLogPage {
  id: string
  taskName: string
  status: RunRecord['status']
  entries: RunLogEntry[]
  dropped: number
  cursor?: number
}

/** The page of `run`'s logs that `params` asks for. Throws `InvalidQueryError` for a bad parameter. */
export function runLogPage(run: RunRecord, params: URLSearchParams): RunLogPage {
  checkParameters(params, PARAMETERS, `GET /__tasks/runs/${run.id}/logs takes after and limit`)
  const limit = limitParameter(params, DEFAULT_LOGS_LIMIT, MAX_LOGS_LIMIT)
  const given = oneParameter(params, 'after', 'a log entry seq, 0 or more')
  const after = given === undefined ? 0 : /^\d{1,15}$/.test(given) ? Number(given) : Number.NaN
  if (Number.isNaN(after)) throw new InvalidQueryError(`after must be a log entry seq, 0 or more (got ${JSON.stringify(given)})`)
  const kept = run.logs?.kept ?? []
  // Entries are kept in seq order with no gap: the first past `after` is found by its number.
  const first = kept.length === 0 ? 0 : Math.max(0, Math.min(kept.length, after - kept[0].seq + 1))
  const entries = kept.slice(first, first + limit)
  const page: RunLogPage = { id: run.id, taskName: run.taskName, status: run.status, entries, dropped: run.logs?.dropped ?? 0 }
  if (first + limit < kept.length) page.cursor = entries[entries.length - 1].seq
  return page
}
