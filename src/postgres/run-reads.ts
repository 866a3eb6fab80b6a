/**
 * How `PostgresRunStore` reads runs: one run (`getRun`, whose calls made
 * while one is in flight go together in one statement), a page of them
 * (`listRuns`), counts by task (`countRunsByTask`) and of all it holds
 * (`size`). Every record comes back whole, with its steps (records.ts).
 */
import type { RunQuery } from '../runtime/tasks/store/store.ts'
import type { RunRecord, RunStatus } from '../types.ts'
import type { PostgresConnection } from './connection.ts'
import { EventWaitReads, eventWaitPage } from './event-wait-reads.ts'
import { GroupCommit } from './group-commit.ts'
import { EVENT_WAIT_NAME } from './migrations.ts'
import { wholeRecord } from './records.ts'
import { pageOrder, searchConditions } from './run-search.ts'

/** The most runs one read of `getRun` calls returns, each with its steps. */
const READ_BATCH = 500

type Row<T> = { record: T }

export class RunReads {
  readonly #conn: PostgresConnection
  /** Reads of one run each: under load (callers waiting for their runs), many go together. */
  readonly #reads = new GroupCommit<string, RunRecord | undefined>((ids) => this.getRuns(ids), { max: READ_BATCH })
  readonly #eventWaits: EventWaitReads

  constructor(conn: PostgresConnection) {
    this.#conn = conn
    this.#eventWaits = new EventWaitReads(conn)
  }

  /**
   * The reads made while one is in flight go together, in one statement;
   * each is sent after the calls made before it were answered, so it sees
   * what they wrote.
   */
  getRun(id: string): Promise<RunRecord | undefined> {
    return this.#reads.add(id)
  }

  /** The runs of `ids` in one statement, in their order; undefined for one the store does not hold. */
  getRuns(ids: string[]): Promise<(RunRecord | undefined)[]> {
    const conn = this.#conn
    return conn.run(async (sql) => {
      const rows = await sql<(Row<RunRecord> & { id: string })[]>`
        SELECT id, ${wholeRecord(sql, conn.schema)} AS record FROM ${sql(conn.schema)}.runs WHERE id = ANY(${ids}::text[])`
      const byId = new Map(rows.map((row) => [row.id, row.record]))
      return ids.map((id) => byId.get(id))
    })
  }

  /** A page of runs; a page of the runs waiting on one event name is read together with the others asked for meanwhile (event-wait-reads.ts). */
  listRuns(query: RunQuery): Promise<RunRecord[]> {
    const page = eventWaitPage(query)
    if (page) return this.#eventWaits.read(page)
    const conn = this.#conn
    return conn.run(async (sql) => {
      const statuses = query.status === undefined ? null : typeof query.status === 'string' ? [query.status] : [...query.status]
      if (statuses?.length === 0) return []
      // The memory store stops once it holds `limit` runs, so a fractional
      // limit rounds up and 0 or less returns none; LIMIT NULL is no limit.
      const limit = query.limit ?? Infinity
      if (!(limit > 0)) return []
      // seq is the insertion order, as the memory store's Map: newest first,
      // no ties, so a page starts right below the seq of the cursor's run
      // (none when the store does not hold it: the comparison is NULL).
      const runs = sql(conn.schema)
      const { after, orderBy } = pageOrder(sql, conn.schema, query)
      // Written as `runs_by_event_wait` indexes it (migrations.ts), and only
      // when asked: a condition that a null parameter turns off would keep
      // a generic plan from the index.
      const eventWait =
        query.waitingForEvent === undefined
          ? sql``
          : sql`AND status = 'suspended' AND ${sql.unsafe(EVENT_WAIT_NAME)} = ${query.waitingForEvent}::text`
      const rows = await sql<Row<RunRecord>[]>`
        SELECT ${wholeRecord(sql, conn.schema)} AS record FROM ${runs}.runs
        WHERE (${query.taskName ?? null}::text IS NULL OR task_name = ${query.taskName ?? null}::text)
          AND (${statuses}::text[] IS NULL OR status = ANY(${statuses}::text[])) ${eventWait}
          ${query.version === undefined ? sql`` : sql`AND record->>'version' = ${query.version}::text`} ${searchConditions(sql, conn.schema, query)}
          ${after}
        ORDER BY ${orderBy}
        LIMIT ${limit === Infinity ? null : Math.ceil(limit)}::bigint`
      return rows.map((row) => row.record)
    })
  }

  countRunsByTask(status: RunStatus | readonly RunStatus[]): Promise<{ taskName: string; count: number }[]> {
    const statuses = typeof status === 'string' ? [status] : [...status]
    if (statuses.length === 0) return Promise.resolve([])
    const conn = this.#conn
    return conn.run(async (sql) => {
      // The status index serves it; no record is read.
      const rows = await sql<{ task_name: string; count: string }[]>`
        SELECT task_name, count(*) AS count FROM ${sql(conn.schema)}.runs WHERE status = ANY(${statuses}::text[]) GROUP BY task_name`
      return rows.map((row) => ({ taskName: row.task_name, count: Number(row.count) }))
    })
  }

  /** How many runs the store holds. */
  count(): Promise<number> {
    const conn = this.#conn
    return conn.run(async (sql) => {
      const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${sql(conn.schema)}.runs`
      return n
    })
  }
}
