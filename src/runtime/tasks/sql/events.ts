/**
 * Events (`RunStore.putEvent`, `eventsSince`, `listEvents`,
 * `noteEventEffects`; docs/events.md) on the SQLite-family run stores: the
 * table, and the operations as procedures (procedure.ts) that each store
 * runs inside its own atomic block (the Node store's write transaction,
 * the Durable Object's `transactionSync`). What an event did is kept in its
 * `record` with the rest of it, so noting it needs no column of its own.
 * Edge-safe: no `node:` import.
 */
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from '../store/store.ts'
import type { EventEffects, EventListQuery } from '../../types/run-store.ts'
import { addEffects, eventCursor, listingBounds, missing } from '../store/event-list.ts'
import { read, type SqlProcedure, write } from './procedure.ts'
import { type EventMatch, matchesEvent, matchPaths } from '../../events/match.ts'

/**
 * The events table: schema version 6 of `SqliteRunStore`'s files, and part
 * of what a Durable Object creates on every wake (hence `IF NOT EXISTS`).
 * `seq` is the rowid, the order events were recorded; `time` is ISO text in
 * UTC (`sortableTime`), which compares as the instants do; `record` is the
 * whole event as JSON. `events_by_name` serves `eventsSince`, the events of
 * a name from a time on; `events_by_time` the prune, the events past their
 * retention, oldest first.
 */
export const EVENTS_TABLE = `
CREATE TABLE IF NOT EXISTS svc_events (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  time TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_events_by_name ON svc_events (name, time);
CREATE INDEX IF NOT EXISTS svc_events_by_time ON svc_events (time);
`

/**
 * The index `listEvents` walks for the events of one name, newest first:
 * schema version 7 of `SqliteRunStore`'s files, and run by a Durable Object
 * on every wake after `EVENTS_TABLE` (an index, unlike a column, is added
 * to a table that exists by `IF NOT EXISTS` alone). The list of every name
 * walks the rowid.
 */
export const EVENTS_BY_NAME_SEQ = `
CREATE INDEX IF NOT EXISTS svc_events_by_name_seq ON svc_events (name, seq);
`

// RETURNING answers with a row only when the row went in: of callers racing
// with one id inside the write lock, the one that gets it recorded the event.
const INSERT_EVENT = 'INSERT INTO svc_events (id, name, time, record) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING seq'
const SELECT_EVENT = 'SELECT record FROM svc_events WHERE id = ?'
// In time order, not seq order: the time index hands over the expired rows
// and stops at the batch, whereas with ORDER BY seq SQLite walks the whole
// table in rowid order on every send that finds nothing expired.
const PRUNE_EVENTS = 'DELETE FROM svc_events WHERE seq IN (SELECT seq FROM svc_events WHERE time < ? ORDER BY time LIMIT ?)'
// Probed first: on most sends nothing has expired, and the probe costs a
// small part of what the DELETE costs when it finds nothing.
const ANY_EXPIRED = 'SELECT 1 FROM svc_events WHERE time < ? LIMIT 1'
const LIST_EVENTS = 'SELECT seq, record FROM svc_events WHERE seq < ? ORDER BY seq DESC LIMIT ?'
const LIST_NAMED_EVENTS = 'SELECT seq, record FROM svc_events WHERE name = ? AND seq < ? ORDER BY seq DESC LIMIT ?'
const UPDATE_RECORD = 'UPDATE svc_events SET record = ? WHERE id = ?'
// The first note of an event, the one each send makes: the lists go on
// the end of the record in one statement, read and written in place.
const NOTE_FIRST = {
  runs: "UPDATE svc_events SET record = json_insert(record, '$.runs', json(?)) WHERE id = ? AND json_type(record, '$.runs') IS NULL AND json_type(record, '$.resumed') IS NULL RETURNING 1",
  resumed:
    "UPDATE svc_events SET record = json_insert(record, '$.resumed', json(?)) WHERE id = ? AND json_type(record, '$.runs') IS NULL AND json_type(record, '$.resumed') IS NULL RETURNING 1",
  both: "UPDATE svc_events SET record = json_insert(record, '$.runs', json(?), '$.resumed', json(?)) WHERE id = ? AND json_type(record, '$.runs') IS NULL AND json_type(record, '$.resumed') IS NULL RETURNING 1",
}

/**
 * `RunStore.putEvent`: removes up to `EVENT_PRUNE_BATCH` events past their
 * retention at `now` (epoch ms), then records `event` unless its id is
 * held, and resolves to the event held and whether this call recorded it.
 */
export function* putEventSql(event: EventRecord, now: number): SqlProcedure<{ event: EventRecord; created: boolean }> {
  const cutoff = new Date(now - EVENT_RETENTION_MS).toISOString()
  const expired = yield read(ANY_EXPIRED, cutoff)
  if (expired.length > 0) yield write(PRUNE_EVENTS, cutoff, EVENT_PRUNE_BATCH)
  // JSON leaves out `data` when it is undefined: an event sent without data has no data field.
  const record = JSON.stringify({ id: event.id, name: event.name, data: event.data, time: event.time })
  // An event's own time that is no instant is kept as given.
  const time = sortableTime(event.time) ?? event.time
  const inserted = yield read(INSERT_EVENT, event.id, event.name, time, record)
  if (inserted.length > 0) return { event: JSON.parse(record) as EventRecord, created: true }
  const [held] = yield read(SELECT_EVENT, event.id)
  return { event: JSON.parse(held.record as string) as EventRecord, created: false }
}

/**
 * `RunStore.eventsSince`: the events named `name` whose time is `since` or
 * later and whose data holds `match`, in the order they were recorded, at
 * most `limit` (a fractional limit rounds up, as the memory store's count
 * does; 0 or less is none). Read a page at a time, narrowed by
 * `matchFilter`, and each event checked by `matchesEvent`: the whole
 * window is looked at, never more than a page of it parsed at once.
 */
export function* eventsSinceSql(name: string, since: string, limit: number, match?: EventMatch): SqlProcedure<EventRecord[]> {
  if (!(limit > 0)) return []
  const from = sortableTime(since)
  // A time that is no instant matches nothing, as `Date.parse` makes it in the memory store.
  if (from === undefined) return []
  const wanted = Math.ceil(limit)
  const filter = matchFilter(match)
  const page = `SELECT seq, record FROM svc_events WHERE name = ? AND time >= ? AND seq > ?${filter.sql} ORDER BY seq LIMIT ${EVENT_PAGE}`
  const found: EventRecord[] = []
  for (let after = 0; ; ) {
    const rows = yield read(page, name, from, after, ...filter.params)
    for (const row of rows) {
      const event = JSON.parse(row.record as string) as EventRecord
      if (!matchesEvent(match, event.data)) continue
      found.push(event)
      if (found.length >= wanted) return found
    }
    if (rows.length < EVENT_PAGE) return found
    after = Number(rows[rows.length - 1].seq)
  }
}

/** Events read at once by `eventsSinceSql`. */
const EVENT_PAGE = 100

/**
 * Conditions on an event's `record` that every event meeting `match`
 * passes (SQLite's JSON functions), so a page holds mostly events that
 * meet it: a string or number value is compared where its path leads, a
 * boolean or null by the JSON type found there. An object or array value,
 * or a path with a member name of digits only (which `matchesEvent` reads
 * as an index into an array as well as a key), is left to `matchesEvent`.
 */
function matchFilter(match: EventMatch | undefined): { sql: string; params: (string | number)[] } {
  let sql = ''
  const params: (string | number)[] = []
  for (const { names, value } of matchPaths(match)) {
    if (names.some((name) => /^\d+$/.test(name))) continue
    // Member names are letters, digits, `_`, `$` and `-` (matchProblem): quoted, each is one key.
    const path = `$.data${names.map((name) => `."${name}"`).join('')}`
    if (typeof value === 'string' || typeof value === 'number') {
      sql += ' AND json_extract(record, ?) = ?'
      params.push(path, value)
    } else if (value === null || typeof value === 'boolean') {
      sql += ' AND json_type(record, ?) = ?'
      params.push(path, String(value))
    }
  }
  return { sql, params }
}

/**
 * `RunStore.listEvents`: a page of events, newest first, one more read than
 * the page holds to know whether another follows.
 */
export function* listEventsSql(query: EventListQuery, where: string): SqlProcedure<{ events: EventRecord[]; cursor?: string }> {
  const { name, limit, before = Number.MAX_SAFE_INTEGER } = listingBounds(query, where)
  const rows = name === undefined ? yield read(LIST_EVENTS, before, limit + 1) : yield read(LIST_NAMED_EVENTS, name, before, limit + 1)
  const page = rows.slice(0, limit)
  const events = page.map((row) => JSON.parse(row.record as string) as EventRecord)
  return rows.length > limit ? { events, cursor: eventCursor(page[limit - 1].seq as number) } : { events }
}

/**
 * `RunStore.noteEventEffects`: reads the held event and writes it back with
 * the ids it lacked, inside the store's write lock, so notes racing from
 * several stores on one file all land. An event noted for the first time
 * (as each send notes its own) gets its lists in one statement. Changes
 * the file by one statement at most.
 */
export function* noteEventEffectsSql(id: string, effects: EventEffects): SqlProcedure<void> {
  const runs = missing(undefined, effects.runs)
  const resumed = missing(undefined, effects.resumed)
  if (runs.length === 0 && resumed.length === 0) return
  const first =
    resumed.length === 0
      ? read(NOTE_FIRST.runs, JSON.stringify(runs), id)
      : runs.length === 0
        ? read(NOTE_FIRST.resumed, JSON.stringify(resumed), id)
        : read(NOTE_FIRST.both, JSON.stringify(runs), JSON.stringify(resumed), id)
  if ((yield first).length > 0) return
  const [held] = yield read(SELECT_EVENT, id)
  if (!held) return
  const event = JSON.parse(held.record as string) as EventRecord
  if (addEffects(event, effects)) yield write(UPDATE_RECORD, JSON.stringify(event), id)
}

/**
 * `time` as `toISOString` writes it, so that comparing the text compares
 * the instants: the same instant written with an offset, or without its
 * milliseconds, would sort elsewhere. `undefined` for a time that is no
 * instant.
 */
function sortableTime(time: string): string | undefined {
  const ms = Date.parse(time)
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}
