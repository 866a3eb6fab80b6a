/**
 * Events on Postgres (`RunStore.putEvent`, `eventsSince`, `listEvents`,
 * `noteEventEffects` of `PostgresRunStore`; docs/events.md), in the
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
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from '../runtime/tasks/store/store.ts'
import type { EventEffects, EventListQuery } from '../runtime/types/run-store.ts'
import { eventCursor, listingBounds, missing } from '../runtime/tasks/store/event-list.ts'
import { type EventMatch, matchesEvent, matchPaths } from '../runtime/events/match.ts'

type EventRow = { id: string; name: string; time: Date; data: unknown; has_data: boolean; runs: string[]; resumed: string[] }
type PutRow = EventRow & { created: boolean }

/**
 * Statements a `putEvent` makes before its error stands. Each one past the
 * first follows an event whose holder's commit the first statement could
 * not see and that was pruned before a second one read it, so two are
 * already rare.
 */
const PUT_ATTEMPTS = 3

/**
 * `RunStore.putEvent`, one statement. It removes up to `EVENT_PRUNE_BATCH`
 * expired events (rows another process is pruning are skipped, not waited
 * for), and inserts the event unless its id is held: `ON CONFLICT` waits
 * for a racing holder to commit, so of processes sending one id, one
 * inserts it. An event held past its retention does not hold its id: the
 * insert takes its row over (with a new `seq`, as if recorded now), as the
 * prune would have freed it first.
 *
 * When nothing was inserted, the held row is read in the same statement;
 * a holder that committed after the statement began is not in its
 * snapshot, so the event is read again in a statement of its own.
 */
export async function putEventPg(
  sql: Sql,
  schema: string,
  where: string,
  event: EventRecord,
): Promise<{ event: EventRecord; created: boolean }> {
  const time = instant(event.time)
  if (time === undefined)
    throw new TypeError(`${where}: event "${event.id}" needs a time that is an ISO timestamp (got ${JSON.stringify(event.time)})`)
  const events = sql`${sql(schema)}.events`
  // JSON text, cast in the statement: SQL NULL marks an event without data,
  // and `data: null` stays the jsonb null (`sql.json(null)` sends SQL NULL).
  const data = event.data === undefined ? null : JSON.stringify(event.data)
  for (let attempt = 1; ; attempt++) {
    const [row] = await sql<PutRow[]>`
      WITH cutoff AS (
        SELECT now() - ${EVENT_RETENTION_MS} * interval '1 millisecond' AS at
      ), pruned AS (
        -- In time order: the time index hands the expired rows over first and
        -- stops at the batch, where seq order would walk every held event
        -- whenever none has expired. The event's own id is left to the
        -- insert, which takes an expired row over: one statement must not
        -- change a row twice.
        DELETE FROM ${events} WHERE seq IN (
          SELECT seq FROM ${events} WHERE time < (SELECT at FROM cutoff) AND id <> ${event.id}
          ORDER BY time LIMIT ${EVENT_PRUNE_BATCH} FOR UPDATE SKIP LOCKED
        )
      ), inserted AS (
        INSERT INTO ${events} (id, name, time, data) VALUES (${event.id}, ${event.name}, ${time}::timestamptz, ${data}::text::jsonb)
        ON CONFLICT (id) DO UPDATE SET seq = DEFAULT, name = excluded.name, time = excluded.time, data = excluded.data,
          runs = '{}', resumed = '{}'
          WHERE events.time < (SELECT at FROM cutoff)
        RETURNING id, name, time, data, data IS NOT NULL AS has_data, runs, resumed
      ), held AS (
        -- Only an unexpired holder: an expired one in this snapshot was taken
        -- over, by this statement or by a racing one, and is read again.
        SELECT id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${events}
        WHERE id = ${event.id} AND time >= (SELECT at FROM cutoff)
      )
      SELECT true AS created, * FROM inserted
      UNION ALL SELECT false AS created, * FROM held WHERE NOT EXISTS (SELECT 1 FROM inserted)`
    if (row) return { event: toEvent(row), created: row.created }
    const [held] = await sql<EventRow[]>`
      SELECT id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${events} WHERE id = ${event.id}`
    if (held) return { event: toEvent(held), created: false }
    if (attempt >= PUT_ATTEMPTS) {
      throw new Error(`${where}: event "${event.id}" was neither recorded nor held after ${PUT_ATTEMPTS} tries; send it again`)
    }
  }
}

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
 * `RunStore.noteEventEffects`, one statement: appends to the event's
 * `runs` and `resumed` the ids they lack, in order. Of updates of one row
 * racing from several processes, each waits for the one before it to
 * commit and then adds to the row as that one left it (an `UPDATE` under
 * READ COMMITTED reads the row's latest version again), so every id lands
 * once. A note that adds nothing writes nothing.
 */
export async function noteEventEffectsPg(sql: Sql, schema: string, id: string, effects: EventEffects): Promise<void> {
  // As JSON text, cast in the statement: a list of text with no type to infer when empty.
  const runs = JSON.stringify(missing(undefined, effects.runs))
  const resumed = JSON.stringify(missing(undefined, effects.resumed))
  if (runs === '[]' && resumed === '[]') return
  const added = (list: string, column: 'runs' | 'resumed') => sql`
    ARRAY(SELECT added.id FROM jsonb_array_elements_text(${list}::text::jsonb) WITH ORDINALITY AS added (id, i)
      WHERE added.id <> ALL (e.${sql(column)}) ORDER BY added.i)`
  const list = (ids: string) => sql`ARRAY(SELECT jsonb_array_elements_text(${ids}::text::jsonb))`
  await sql`
    UPDATE ${sql(schema)}.events AS e SET runs = e.runs || ${added(runs, 'runs')}, resumed = e.resumed || ${added(resumed, 'resumed')}
    WHERE e.id = ${id} AND NOT (e.runs @> ${list(runs)} AND e.resumed @> ${list(resumed)})`
}

/**
 * `time` as `toISOString` writes it, so that Postgres reads the instant
 * JavaScript does (`Date.parse` takes forms Postgres refuses), and the
 * time handed back, `toISOString` of the column, is the one sent.
 * `undefined` for a time that is no instant.
 */
function instant(time: string): string | undefined {
  const ms = Date.parse(time)
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}

function toEvent(row: EventRow): EventRecord {
  const event: EventRecord = { id: row.id, name: row.name, time: row.time.toISOString() }
  if (row.has_data) event.data = row.data
  if (row.runs.length > 0) event.runs = row.runs
  if (row.resumed.length > 0) event.resumed = row.resumed
  return event
}
