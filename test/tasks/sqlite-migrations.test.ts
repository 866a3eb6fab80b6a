/**
 * The SQLite dialect's migration chain (src/runtime/tasks/sql/migrations.ts),
 * step by step on node:sqlite, for each host a step applies to: a database
 * the chain brought to the version before the step, holding rows, gains what
 * the step makes and keeps its rows. The Durable Object host records its
 * version in `svc_schema` here as in workerd; storage of a release that
 * recorded none is taken at the version its tables match.
 */
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS, migrateSchema, plainTables, SCHEMA_VERSION, type SqliteHost } from '../../src/runtime/tasks/sql/migrations.ts'
import { DROP_RUN_TIMERS } from '../../src/runtime/tasks/sql/queries.ts'
import { fileDriver } from '../../src/sqlite/database.ts'

const HOSTS: SqliteHost[] = ['file', 'durable-object']

/** `node:sqlite` as the chain runs on it, for either host: the file store's driver. */
const driver = fileDriver

/** A database the chain brought to `version` on `host`. */
function at(host: SqliteHost, version: number): DatabaseSync {
  const db = new DatabaseSync(':memory:')
  migrateSchema(driver(db), host, 'test', version)
  return db
}

/** The tables, indexes and columns the database holds, as `name` and `table.column`. */
function shape(db: DatabaseSync): Set<string> {
  const objects = db.prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_autoindex%'").all()
  const columns = db
    .prepare("SELECT m.name || '.' || p.name AS name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'")
    .all()
  return new Set([...objects, ...columns].map((row) => String(row.name)))
}

const made = (before: Set<string>, after: Set<string>) => [...after].filter((name) => !before.has(name)).sort()

const columns = (table: string, ...names: string[]) => [table, ...names.map((name) => `${table}.${name}`)]

/** What each step makes, by host where they differ. */
const MAKES: Record<number, (host: SqliteHost) => string[]> = {
  1: (host) => [
    ...columns('svc_runs', 'seq', 'id', 'task_name', 'status', 'idempotency_key', 'finished_seq', 'record'),
    ...['svc_runs_by_task', 'svc_runs_by_status', 'svc_runs_by_finish', 'svc_runs_by_key'],
    ...columns('svc_timers', 'seq', 'id', 'run_id', ...(host === 'durable-object' ? ['due_at'] : []), 'record'),
    ...(host === 'durable-object' ? ['svc_timers_by_due'] : []),
    ...columns('svc_tokens', 'id', 'run_id', 'status', 'record'),
    'svc_tokens_by_run',
  ],
  2: () => [...columns('svc_steps', 'seq', 'run_seq', 'key', 'record'), 'svc_steps_by_run'],
  3: () => ['svc_runs.owner', ...columns('svc_owners', 'owner', 'pid', 'host', 'ns', 'beat_at')],
  4: () => ['svc_runs.owner_fence'],
  5: () => [
    'svc_runs.lease_owner',
    'svc_runs.lease_until',
    'svc_timers.due_at',
    'svc_timers.claimed_by',
    'svc_timers.claim_until',
    'svc_timers_by_due_at',
    ...columns('svc_cron_ticks', 'task_name', 'tick'),
    ...columns('svc_wakes', 'id', 'n'),
    'svc_owners.shared',
  ],
  6: () => [...columns('svc_events', 'seq', 'id', 'name', 'time', 'record'), 'svc_events_by_name', 'svc_events_by_time'],
  7: () => ['svc_events_by_name_seq'],
  8: () => [
    ...columns('svc_changes', 'seq', 'owner', 'at', 'payload'),
    ...columns('svc_change_listeners', 'owner', 'until'),
    'sqlite_sequence',
    'sqlite_sequence.name',
    'sqlite_sequence.seq',
  ],
  9: () => ['svc_runs_by_event_wait'],
  10: () => columns('svc_processes', 'owner', 'versions', 'started_at', 'beat_at'),
  11: () => ['svc_runs_by_task_finish'],
  13: () => ['svc_timers_by_run'],
  14: () => [...columns('svc_schedules', 'seq', 'id', 'task', 'key', 'record'), 'svc_schedules_by_key'],
  15: () => [
    ...columns('svc_run_tags', 'tag', 'run_seq'),
    'svc_run_tags_by_run',
    ...columns('svc_run_metadata', 'key', 'value', 'run_seq'),
    'svc_run_metadata_by_run',
    ...['svc_runs_tags_insert', 'svc_runs_metadata_insert', 'svc_runs_search_delete'],
    'svc_runs.created_at',
    'svc_runs_by_created',
  ],
  16: () => ['svc_runs_tags_delete', 'svc_runs_metadata_delete'],
  17: () => [...columns('svc_signals', 'seq', 'run_id', 'id', 'name', 'taken_by', 'record'), 'svc_signals_by_id', 'svc_signals_untaken'],
  18: () => [
    ...columns('svc_updates', 'run_id', 'id', 'seq', 'name', 'data', 'sent_at', 'status', 'answer'),
    ...['svc_updates_by_run', 'svc_updates_pending'],
  ],
}

/** What a step drops, where it drops anything. */
const DROPS: Record<number, string[]> = {
  16: ['svc_run_tags_by_run', 'svc_runs_tags_insert', 'svc_runs_search_delete'],
}

const RUN = {
  id: 'r1',
  taskName: 'nap',
  status: 'suspended',
  createdAt: '2029-01-01T00:00:00.000Z',
  steps: { z: { status: 'completed', output: 'é' }, a: { status: 'completed', output: 1 } },
}
const TIMER = { id: 'r1:sleep:nap', runId: 'r1', dueAt: '2030-01-01T00:00:00.000Z' }
const TOKEN = { id: 't1', runId: 'r1', status: 'waiting' }
const EVENT = { id: 'e1', name: 'order.paid', time: '2030-01-01T00:00:00.000Z' }

/** A run, a timer, a token and (once there is a table for them) an event, in tables named with `prefix`. */
function insertRows(db: DatabaseSync, host: SqliteHost, version: number, prefix: string): void {
  const record = JSON.stringify(version < 2 ? RUN : { ...RUN, steps: {} })
  db.prepare(`INSERT INTO ${prefix}runs (id, task_name, status, record) VALUES (?, ?, ?, ?)`).run(RUN.id, RUN.taskName, RUN.status, record)
  if (host === 'durable-object') {
    db.prepare(`INSERT INTO ${prefix}timers (id, run_id, due_at, record) VALUES (?, ?, ?, ?)`).run(
      TIMER.id,
      TIMER.runId,
      Date.parse(TIMER.dueAt),
      JSON.stringify(TIMER),
    )
  } else {
    db.prepare(`INSERT INTO ${prefix}timers (id, run_id, record) VALUES (?, ?, ?)`).run(TIMER.id, TIMER.runId, JSON.stringify(TIMER))
  }
  db.prepare(`INSERT INTO ${prefix}tokens (id, run_id, status, record) VALUES (?, ?, ?, ?)`).run(
    TOKEN.id,
    TOKEN.runId,
    TOKEN.status,
    JSON.stringify(TOKEN),
  )
  if (version >= 6) {
    db.prepare(`INSERT INTO ${prefix}events (id, name, time, record) VALUES (?, ?, ?, ?)`).run(
      EVENT.id,
      EVENT.name,
      EVENT.time,
      JSON.stringify(EVENT),
    )
  }
}

/** The tables of a database at `version` (before 12) by the names the releases then gave them: no prefix, on tables or indexes. */
function unprefix(db: DatabaseSync, host: SqliteHost, version: number): void {
  for (const name of plainTables(host, version)) db.exec(`ALTER TABLE svc_${name} RENAME TO ${name}`)
  const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as {
    name: string
    sql: string
  }[]
  for (const { name, sql } of indexes) {
    db.exec(`DROP INDEX ${name}`)
    db.exec(sql.replace(name, name.slice('svc_'.length)))
  }
}

const rows = (db: DatabaseSync, table: string) =>
  db
    .prepare(`SELECT * FROM ${table} ORDER BY 1`)
    .all()
    .map((row) => ({ ...row }))
const version = (db: DatabaseSync, host: SqliteHost) =>
  host === 'file'
    ? Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    : Number((db.prepare('SELECT version FROM svc_schema').get() as { version: number }).version)

describe.each(HOSTS)('the chain on the %s host', (host) => {
  const steps = MIGRATIONS.filter((step) => step.hosts.includes(host))

  it.each(steps.map((step) => [step.version]))('step %i, from the version before it, makes its tables and keeps the rows', (to) => {
    const db = at(host, to - 1)
    const prefix = to === 12 ? '' : 'svc_'
    if (to === 12) unprefix(db, host, 11)
    if (to > 1) insertRows(db, host, to - 1, prefix)
    const before = shape(db)
    const held = to > 1 ? rows(db, `${prefix}runs`).map(({ seq, id, record }) => ({ seq, id, record })) : []
    migrateSchema(driver(db), host, 'test', to)
    expect(version(db, host)).toBe(to)
    const after = shape(db)
    if (to === 12) {
      // Every table and index moves to its prefixed name, and nothing else changes.
      expect([...after].sort()).toEqual(
        [...before].map((name) => (name.startsWith('sqlite_') || name.startsWith('svc_schema') ? name : `svc_${name}`)).sort(),
      )
    } else {
      expect(made(before, after)).toEqual(MAKES[to](host).sort())
      expect(made(after, before)).toEqual((DROPS[to] ?? []).sort())
    }
    if (to === 1) return
    const runs = rows(db, 'svc_runs')
    expect(runs.map(({ seq, id }) => ({ seq, id }))).toEqual(held.map(({ seq, id }) => ({ seq, id })))
    if (to === 2) {
      // The steps the record held move to their table, in the record's order, and the record keeps `{}`.
      expect(JSON.parse(runs[0].record as string)).toEqual({ ...RUN, steps: {} })
      expect(rows(db, 'svc_steps').map(({ run_seq, key, record }) => ({ run_seq, key, step: JSON.parse(record as string) }))).toEqual([
        { run_seq: held[0].seq, key: 'z', step: RUN.steps.z },
        { run_seq: held[0].seq, key: 'a', step: RUN.steps.a },
      ])
    } else {
      expect(runs.map((run) => run.record)).toEqual(held.map((run) => run.record))
    }
    // Step 15 gives the runs held their creation time from the record.
    if (to === 15) expect(runs.map((run) => run.created_at)).toEqual([RUN.createdAt])
    const timers = rows(db, 'svc_timers')
    expect(timers.map((timer) => JSON.parse(timer.record as string))).toEqual([TIMER])
    // Step 5 gives the file's timers their due time from the record.
    if (host === 'file' && to === 5) expect(timers[0].due_at).toBe(TIMER.dueAt)
    expect(rows(db, 'svc_tokens').map((token) => JSON.parse(token.record as string))).toEqual([TOKEN])
    if (to > 6) expect(rows(db, 'svc_events').map((event) => JSON.parse(event.record as string))).toEqual([EVENT])
  })

  it('step 16 keeps the tag rows of the runs held; the rows then go with their run, by primary key', () => {
    const db = at(host, 15)
    const insert = db.prepare('INSERT INTO svc_runs (id, task_name, status, record) VALUES (?, ?, ?, ?)')
    for (const [id, tags] of [
      ['tagged', ['tenant:a', 'plan:pro']],
      ['other', ['tenant:b']],
      ['bare', undefined],
    ] as const) {
      insert.run(id, RUN.taskName, 'completed', JSON.stringify({ ...RUN, id, status: 'completed', steps: {}, tags }))
    }
    const tagRows = () => rows(db, 'svc_run_tags').map(({ tag, run_seq }) => `${tag} ${run_seq}`)
    const held = tagRows()
    expect(held).toHaveLength(3)
    migrateSchema(driver(db), host, 'test', 16)
    expect(tagRows()).toEqual(held)
    // A run inserted now writes no tag rows by itself: the store writes them (tagRows).
    insert.run('later', RUN.taskName, 'completed', JSON.stringify({ ...RUN, id: 'later', steps: {}, tags: ['tenant:a'] }))
    expect(tagRows()).toEqual(held)
    // The delete trigger's statement, on a record and a seq of its own, finds the rows by primary key.
    const trigger = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'svc_runs_tags_delete'").get()!.sql as string
    const statement = trigger
      .match(/BEGIN (DELETE .*); END/)![1]
      .replaceAll('OLD.record', '?')
      .replaceAll('OLD.seq', '?')
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${statement}`)
      .all('{"tags":["x"]}', 1)
      .map((row) => String(row.detail))
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH svc_run_tags USING PRIMARY KEY \(tag=\? AND run_seq=\?\)$/))
    db.prepare('DELETE FROM svc_runs WHERE id IN (?, ?)').run('tagged', 'bare')
    expect(tagRows()).toEqual(['tenant:b 2'])
  })

  it('step 13 serves dropTimersOf by the run index, not a scan of the timers', () => {
    const db = at(host, SCHEMA_VERSION)
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${DROP_RUN_TIMERS}`)
      .all('r1')
      .map((row) => String(row.detail))
    expect(plan).toEqual([expect.stringMatching(/^SEARCH svc_timers USING (COVERING )?INDEX svc_timers_by_run \(run_id=\?\)$/)])
  })

  it('a database at the current version runs no step and writes no version', () => {
    const db = at(host, SCHEMA_VERSION)
    const before = shape(db)
    const changes = db.prepare('SELECT total_changes() AS n').get()
    migrateSchema(driver(db), host, 'test')
    expect(shape(db)).toEqual(before)
    expect(db.prepare('SELECT total_changes() AS n').get()).toEqual(changes)
  })

  it('refuses a database a newer release migrated, and changes nothing', () => {
    const db = at(host, SCHEMA_VERSION)
    if (host === 'file') db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`)
    else db.exec(`UPDATE svc_schema SET version = ${SCHEMA_VERSION + 1}`)
    expect(() => migrateSchema(driver(db), host, 'the database')).toThrow(
      `the database holds schema version ${SCHEMA_VERSION + 1}, newer than the ${SCHEMA_VERSION} this version of svc reads; ${host === 'file' ? 'upgrade svc or use another file' : 'deploy a release of svc that reads it'}`,
    )
    expect(version(db, host)).toBe(SCHEMA_VERSION + 1)
  })
})

describe('Durable Object storage of a release that recorded no version', () => {
  const fresh = shape(at('durable-object', SCHEMA_VERSION))

  it.each(MIGRATIONS.filter((step) => step.hosts.includes('durable-object')).map((step) => [step.version]))(
    'with the tables of version %i, is taken at that version and migrated to the current one',
    (from) => {
      const db = at('durable-object', from)
      db.exec('DROP TABLE svc_schema')
      if (from < 12) unprefix(db, 'durable-object', from)
      if (from > 0) insertRows(db, 'durable-object', from, from < 12 ? '' : 'svc_')
      migrateSchema(driver(db), 'durable-object', 'test')
      expect(shape(db)).toEqual(fresh)
      expect(version(db, 'durable-object')).toBe(SCHEMA_VERSION)
      expect(rows(db, 'svc_runs').map((run) => ({ ...JSON.parse(run.record as string), steps: {} }))).toEqual([{ ...RUN, steps: {} }])
      expect(rows(db, 'svc_steps').map((step) => step.key)).toEqual(from < 2 ? ['z', 'a'] : [])
    },
  )

  it('with an events table but no steps table, moves the steps and keeps the events', () => {
    const db = at('durable-object', 1)
    db.exec('DROP TABLE svc_schema')
    insertRows(db, 'durable-object', 1, 'svc_')
    migrateSchema(driver(db), 'durable-object', 'test', 6)
    db.exec('DROP TABLE svc_steps')
    db.prepare('UPDATE svc_runs SET record = ?').run(JSON.stringify(RUN))
    db.exec('DROP TABLE svc_schema')
    db.prepare('INSERT INTO svc_events (id, name, time, record) VALUES (?, ?, ?, ?)').run(
      EVENT.id,
      EVENT.name,
      EVENT.time,
      JSON.stringify(EVENT),
    )
    migrateSchema(driver(db), 'durable-object', 'test')
    expect(shape(db)).toEqual(fresh)
    expect(rows(db, 'svc_steps').map((step) => step.key)).toEqual(['z', 'a'])
    expect(rows(db, 'svc_events').map((event) => JSON.parse(event.record as string))).toEqual([EVENT])
  })
})
