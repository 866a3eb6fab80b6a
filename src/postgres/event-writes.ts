/**
 * How `PostgresRunStore` writes events (`putEvent`, `noteEventEffects`):
 * the calls made while one is in flight go together (group-commit.ts), as
 * rows of one statement, each answered once it committed. Every send
 * records its event and notes what it did, so under load that is one
 * commit for many sends, where each would queue for a commit of its own.
 * Each row does what the statement of one event would do alone; two calls
 * on one event never share a batch.
 */
import type { Sql } from 'postgres'
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from '../runtime/tasks/store/store.ts'
import type { EventEffects } from '../runtime/types/run-store.ts'
import { missing } from '../runtime/tasks/store/event-list.ts'
import type { PostgresConnection } from './connection.ts'
import { type EventRow, instant, toEvent } from './events.ts'
import { GroupCommit, type ItemFailure, togetherOrAlone } from './group-commit.ts'

/** The most events one statement records or notes. */
const EVENT_BATCH = 500

/**
 * Statements a `putEvent` makes before its error stands. Each one past the
 * first follows an event whose holder's commit the first statement could
 * not see and that was pruned before a second one read it, so two are
 * already rare.
 */
const PUT_ATTEMPTS = 3

/** An event to record, its time as Postgres reads it (`instant`) and its data as JSON text. */
interface EventPut {
  id: string
  name: string
  time: string
  /** Absent for an event sent without data. */
  data?: string
}

/** The ids an event's note adds, each list without repeats. */
interface EventNote {
  id: string
  runs: string[]
  resumed: string[]
}

export type PutAnswer = { event: EventRecord; created: boolean }
type PutRow = EventRow & { created: boolean }

export class EventWrites {
  readonly #conn: PostgresConnection
  readonly #where: string
  readonly #puts = new GroupCommit<EventPut, PutAnswer>((puts) => this.#putBatch(puts), { key: (put) => put.id, max: EVENT_BATCH })
  readonly #notes = new GroupCommit<EventNote, void>((notes) => this.#noteBatch(notes), { key: (note) => note.id, max: EVENT_BATCH })

  constructor(conn: PostgresConnection, where: string) {
    this.#conn = conn
    this.#where = where
  }

  /** `RunStore.putEvent`: a row of the next batch's statement. */
  async putEvent(event: EventRecord): Promise<PutAnswer> {
    const time = instant(event.time)
    if (time === undefined)
      throw new TypeError(`${this.#where}: event "${event.id}" needs a time that is an ISO timestamp (got ${JSON.stringify(event.time)})`)
    const put: EventPut = { id: event.id, name: event.name, time }
    // JSON text, cast in the statement: no data is SQL NULL, and `data: null` the jsonb null.
    if (event.data !== undefined) put.data = JSON.stringify(event.data)
    return this.#puts.add(put)
  }

  /** `RunStore.noteEventEffects`: a row of the next batch's statement; a note that adds nothing writes nothing. */
  async noteEventEffects(id: string, effects: EventEffects): Promise<void> {
    const note: EventNote = { id, runs: missing(undefined, effects.runs), resumed: missing(undefined, effects.resumed) }
    if (note.runs.length === 0 && note.resumed.length === 0) return
    return this.#notes.add(note)
  }

  /**
   * The `putEvent` calls of a batch. A statement that fails wrote nothing:
   * when it held more than one event, each goes again alone and answers
   * for itself (data Postgres cannot store).
   */
  #putBatch(puts: EventPut[]): Promise<(PutAnswer | ItemFailure)[]> {
    const conn = this.#conn
    return togetherOrAlone(puts, (batch) => conn.run((sql) => putEventsPg(sql, conn.schema, this.#where, batch)))
  }

  /** The `noteEventEffects` calls of a batch, as `#putBatch` sends its calls. */
  #noteBatch(notes: EventNote[]): Promise<(undefined | ItemFailure)[]> {
    const conn = this.#conn
    return togetherOrAlone(notes, (batch) => conn.run((sql) => noteEventsPg(sql, conn.schema, batch)))
  }
}

/**
 * `RunStore.putEvent` of each event of `puts` (ids all different), in one
 * statement. It removes up to `EVENT_PRUNE_BATCH` expired events (rows
 * another process is pruning are skipped, not waited for), and inserts
 * each event unless its id is held: `ON CONFLICT` waits for a racing
 * holder to commit, so of processes sending one id, one inserts it. An
 * event held past its retention does not hold its id: the insert takes its
 * row over (with a new `seq`, as if recorded now), as the prune would have
 * freed it first. The rows go in by id, so that processes inserting the
 * same ids at once wait for one another in one order, not in a deadlock.
 *
 * When an event was not inserted, its held row is read in the same
 * statement; a holder that committed after the statement began is not in
 * its snapshot, so those events are read again in a statement of their
 * own, and the ones that read finds no longer held (pruned meanwhile) are
 * put again.
 */
export async function putEventsPg(sql: Sql, schema: string, where: string, puts: EventPut[]): Promise<PutAnswer[]> {
  const answers = new Map<string, PutAnswer>()
  let pending = puts
  for (let attempt = 1; ; attempt++) {
    for (const row of await putOnce(sql, schema, pending)) answers.set(row.id, { event: toEvent(row), created: row.created })
    let unread = pending.filter((put) => !answers.has(put.id))
    if (unread.length > 0) {
      const held = await sql<EventRow[]>`
        SELECT id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${sql(schema)}.events
        WHERE id = ANY(${unread.map((put) => put.id)}::text[])`
      for (const row of held) answers.set(row.id, { event: toEvent(row), created: false })
      unread = unread.filter((put) => !answers.has(put.id))
    }
    if (unread.length === 0) return puts.map((put) => answers.get(put.id)!)
    if (attempt >= PUT_ATTEMPTS) {
      throw new Error(`${where}: event "${unread[0].id}" was neither recorded nor held after ${PUT_ATTEMPTS} tries; send it again`)
    }
    pending = unread
  }
}

/** The statement of `putEventsPg`: a row for each event inserted or held in its snapshot. */
function putOnce(sql: Sql, schema: string, puts: EventPut[]): Promise<PutRow[]> {
  const events = sql`${sql(schema)}.events`
  const ids = puts.map((put) => put.id)
  return sql<PutRow[]>`
    WITH cutoff AS (
      SELECT now() - ${EVENT_RETENTION_MS} * interval '1 millisecond' AS at
    ), batch AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(puts)}::text::jsonb) AS b (id text, name text, time text, data text)
    ), pruned AS (
      -- In time order: the time index hands the expired rows over first and
      -- stops at the batch, where seq order would walk every held event
      -- whenever none has expired. The batch's own ids are left to the
      -- insert, which takes an expired row over: one statement must not
      -- change a row twice.
      DELETE FROM ${events} WHERE seq IN (
        SELECT seq FROM ${events} WHERE time < (SELECT at FROM cutoff) AND id <> ALL(${ids}::text[])
        ORDER BY time LIMIT ${EVENT_PRUNE_BATCH} FOR UPDATE SKIP LOCKED
      )
    ), inserted AS (
      INSERT INTO ${events} (id, name, time, data)
      SELECT id, name, time::timestamptz, data::jsonb FROM batch ORDER BY id
      ON CONFLICT (id) DO UPDATE SET seq = DEFAULT, name = excluded.name, time = excluded.time, data = excluded.data,
        runs = '{}', resumed = '{}'
        WHERE events.time < (SELECT at FROM cutoff)
      RETURNING id, name, time, data, data IS NOT NULL AS has_data, runs, resumed
    ), held AS (
      -- Only an unexpired holder: an expired one in this snapshot was taken
      -- over, by this statement or by a racing one, and is read again.
      SELECT id, name, time, data, data IS NOT NULL AS has_data, runs, resumed FROM ${events}
      WHERE id = ANY(${ids}::text[]) AND time >= (SELECT at FROM cutoff)
    )
    SELECT true AS created, * FROM inserted
    UNION ALL SELECT false AS created, * FROM held WHERE id NOT IN (SELECT id FROM inserted)`
}

/**
 * `RunStore.noteEventEffects` of each note of `notes` (ids all different),
 * in one statement: appends to each event's `runs` and `resumed` the ids
 * they lack, in order. Of updates of one row racing from several
 * processes, each waits for the one before it to commit and then adds to
 * the row as that one left it (an `UPDATE` under READ COMMITTED reads the
 * row's latest version again, and works its new values out from it), so
 * every id lands once. A row that would gain nothing is not written.
 */
async function noteEventsPg(sql: Sql, schema: string, notes: EventNote[]): Promise<undefined[]> {
  const added = (column: 'runs' | 'resumed') => sql`
    ARRAY(SELECT added.id FROM jsonb_array_elements_text(n.${sql(column)}) WITH ORDINALITY AS added (id, i)
      WHERE added.id <> ALL (e.${sql(column)}) ORDER BY added.i)`
  const list = (column: 'runs' | 'resumed') => sql`ARRAY(SELECT jsonb_array_elements_text(n.${sql(column)}))`
  await sql`
    UPDATE ${sql(schema)}.events AS e SET runs = e.runs || ${added('runs')}, resumed = e.resumed || ${added('resumed')}
    FROM jsonb_to_recordset(${JSON.stringify(notes)}::text::jsonb) AS n (id text, runs jsonb, resumed jsonb)
    WHERE e.id = n.id AND NOT (e.runs @> ${list('runs')} AND e.resumed @> ${list('resumed')})`
  return notes.map(() => undefined)
}
