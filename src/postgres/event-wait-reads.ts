/**
 * The read a send makes for the runs waiting on its event (`listRuns` with
 * `waitingForEvent`, wait-for-event.ts): the reads made while one is in
 * flight go together (group-commit.ts), a page for each in one statement.
 * Every send reads one, mostly to find no run waiting; under load that is
 * one round trip for many sends. Each read is sent after the call was
 * made, so it sees every wait armed before it, as a read of its own would.
 */
import type { Sql } from 'postgres'
import type { RunQuery } from '../runtime/tasks/store/store.ts'
import type { RunRecord } from '../types.ts'
import type { PostgresConnection } from './connection.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'
import { EVENT_WAIT_NAME } from './migrations.ts'
import { wholeRecord } from './records.ts'

/** The most pages one statement reads. */
const WAIT_READ_BATCH = 100

/** A page of the runs suspended on a wait for event `name`, newest first, after the run `cursor`. */
export interface EventWaitPage {
  name: string
  /** null for no limit. */
  limit: number | null
  cursor: string | null
}

/**
 * The page `query` asks for, when it asks for nothing but the runs
 * suspended on a wait for one event name (as a send does); undefined for
 * any other query, which reads on its own.
 */
export function eventWaitPage(query: RunQuery): EventWaitPage | undefined {
  const { waitingForEvent, status, limit, cursor } = query
  if (typeof waitingForEvent !== 'string') return undefined
  for (const key in query) {
    if ((query as Record<string, unknown>)[key] !== undefined && !['waitingForEvent', 'status', 'limit', 'cursor'].includes(key))
      return undefined
  }
  // Only suspended runs wait: any other status asked for beside it adds none.
  const suspended = status === undefined || status === 'suspended' || (Array.isArray(status) && status.includes('suspended'))
  const bounded = limit === undefined || limit === Infinity || (limit > 0 && limit <= Number.MAX_SAFE_INTEGER)
  if (!suspended || !bounded) return undefined
  if (cursor !== undefined && typeof cursor !== 'string') return undefined
  return { name: waitingForEvent, limit: limit === undefined || limit === Infinity ? null : Math.ceil(limit), cursor: cursor ?? null }
}

export class EventWaitReads {
  readonly #conn: PostgresConnection
  readonly #reads = new GroupCommit<EventWaitPage, RunRecord[]>((pages) => this.#readBatch(pages), { max: WAIT_READ_BATCH })

  constructor(conn: PostgresConnection) {
    this.#conn = conn
  }

  /** The page, read together with the other pages asked for meanwhile. */
  read(page: EventWaitPage): Promise<RunRecord[]> {
    return this.#reads.add(page)
  }

  /**
   * Each page as `listRuns` reads it alone (run-reads.ts): `seq` newest
   * first, from `runs_by_event_wait` (written as it indexes the name),
   * below the `seq` of the cursor's run (none when the store does not
   * hold it), at most its limit.
   */
  #readBatch(pages: EventWaitPage[]): Promise<(RunRecord[] | ItemFailure)[]> {
    const conn = this.#conn
    return togetherOrAlone(pages, (batch) => conn.run((sql) => readPages(sql, conn.schema, batch)))
  }
}

/** The statement of `EventWaitReads`: every page of `pages`, in their order. */
async function readPages(sql: Sql, schema: string, pages: EventWaitPage[]): Promise<RunRecord[][]> {
  const rows = await sql<{ i: number; record: RunRecord }[]>`
    SELECT p.i, w.record FROM jsonb_to_recordset(${JSON.stringify(pages.map((page, i) => ({ ...page, i })))}::text::jsonb)
      AS p (i int, name text, "limit" bigint, cursor text)
    CROSS JOIN LATERAL (
      SELECT ${wholeRecord(sql, schema)} AS record, runs.seq FROM ${sql(schema)}.runs
      WHERE runs.status = 'suspended' AND ${sql.unsafe(EVENT_WAIT_NAME)} = p.name
        AND (p.cursor IS NULL OR runs.seq < (SELECT c.seq FROM ${sql(schema)}.runs AS c WHERE c.id = p.cursor))
      ORDER BY runs.seq DESC
      LIMIT p."limit"
    ) AS w
    ORDER BY p.i, w.seq DESC`
  const found = pages.map((): RunRecord[] => [])
  for (const row of rows) found[row.i].push(row.record)
  return found
}
