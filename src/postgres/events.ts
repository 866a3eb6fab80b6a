/**
 * Events on Postgres (`RunStore.eventsSince` and `listEvents` of
 * `PostgresRunStore`, and the rows event-writes.ts reads back for
 * `putEvent` and `noteEventEffects`; docs/events.md), in the
 * `events` table of schema version 6, with the `runs` and `resumed` columns
 * of version 7 (migrations.ts). `data` is SQL NULL for an event sent
 * without data and the jsonb `null` for one sent with `data: null`, so
 * each comes back as it was sent.
 *
 * Retention is measured on the database's clock (`now()`) against each
 * event's own `time`: every process sharing the schema then lets go of an
 * event at the same moment, whatever its own clock says.
 */
import type { Sql } from 'postgres'
import type { EventRecord } from '../runtime/tasks/store/store.ts'
import type { EventListQuery } from '../runtime/types/run-store.ts'
import { eventCursor, listingBounds } from '../runtime/tasks/store/event-list.ts'
import { type EventMatch, matchesEvent, matchPaths } from '../runtime/events/match.ts'

export type EventRow = { id: string; name: string; time: Date; data: unknown; has_data: boolean; runs: string[]; resumed: string[] }

/**
 * `RunStore.eventsSince`: the events named `name` whose time is `since` or
 * later and whose data holds `match`, in the order they were recorded, at
 * most `limit` (a fractional limit rounds up, as the memory store's count
 * does; 0 or less is none). Each path of `match` is compared in the query
 * (`#>` reads a path as `matchesEvent` does, an index into an array
 * included, and `jsonb` equality is JSON's), a page at a time, and each
 * event is checked again by `matchesEvent`: the whole window is looked at,
 * never more than a page of it read at once.
 */
export async function eventsSincePg(
  sql: Sql,
  schema: string,
  name: string,
  since: string,
  limit: number,
  match?: EventMatch,
): Promise<EventRecord[]> {
  if (!(limit > 0)) return []
  const from = instant(since)
  // A time that is no instant matches nothing, as `Date.parse` makes it in the memory store.
  if (from === undefined) return []
  const wanted = Math.ceil(limit)
  const holds = matchPaths(match).reduce(
    (conditions, { names, value }) => sql`${conditions} AND data #> ${names}::text[] = ${JSON.stringify(value)}::text::jsonb`,
    sql``,
  )
  const found: EventRecord[] = []
  for (let after = '0'; ; ) {
    const rows = await sql<(EventRow & { seq: string })[]>`
      SELECT seq, id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${sql(schema)}.events
      WHERE name = ${name} AND time >= ${from}::timestamptz AND seq > ${after} ${holds}
      ORDER BY seq
      LIMIT ${EVENT_PAGE}`
    for (const row of rows) {
      const event = toEvent(row)
      if (!matchesEvent(match, event.data)) continue
      found.push(event)
      if (found.length >= wanted) return found
    }
    if (rows.length < EVENT_PAGE) return found
    after = rows[rows.length - 1].seq
  }
}

/** Events read at once by `eventsSincePg`. */
const EVENT_PAGE = 100

/**
 * `RunStore.listEvents`: a page of events, newest first, by the primary key
 * or `events_by_name_seq`; one more is read than the page holds, to know
 * whether another follows.
 */
export async function listEventsPg(
  sql: Sql,
  schema: string,
  where: string,
  query: EventListQuery,
): Promise<{ events: EventRecord[]; cursor?: string }> {
  const { name, limit, before } = listingBounds(query, where)
  const rows = await sql<(EventRow & { seq: string })[]>`
    SELECT seq, id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${sql(schema)}.events
    WHERE true ${name === undefined ? sql`` : sql`AND name = ${name}`} ${before === undefined ? sql`` : sql`AND seq < ${before}`}
    ORDER BY seq DESC
    LIMIT ${limit + 1}`
  const page = rows.slice(0, limit)
  const events = page.map(toEvent)
  return rows.length > limit ? { events, cursor: eventCursor(page[limit - 1].seq) } : { events }
}

/**
 * `time` as `toISOString` writes it, so that Postgres reads the instant
 * JavaScript does (`Date.parse` takes forms Postgres refuses), and the
 * time handed back, `toISOString` of the column, is the one sent.
 * `undefined` for a time that is no instant.
 */
export function instant(time: string): string | undefined {
  const ms = Date.parse(time)
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}

export function toEvent(row: EventRow): EventRecord {
  const event: EventRecord = { id: row.id, name: row.name, time: row.time.toISOString() }
  if (row.has_data) event.data = row.data
  if (row.runs.length > 0) event.runs = row.runs
  if (row.resumed.length > 0) event.resumed = row.resumed
  return event
}
