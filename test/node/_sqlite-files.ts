/**
 * Fresh SQLite files for a suite, and the stores and raw connections a test
 * opens on them, closed after each test (last opened first) and the folder
 * removed after the suite.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterAll, afterEach } from 'vitest'
import { SqliteRunStore, type SqliteRunStoreOptions } from '../../src/node.ts'
import { SEARCH_TABLES } from '../../src/runtime/tasks/sql/search.ts'

export function sqliteFiles(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  // A store's close() returns a promise, a raw connection's returns nothing: each is awaited.
  const open: { close(): unknown }[] = []
  afterEach(async () => {
    for (const handle of open.splice(0).reverse()) await handle.close()
  })
  return {
    /** A new file's path. */
    dbFile: () => join(dir, `runs-${++files}.db`),
    /** Closes `handle` after the test. */
    track<T extends { close(): unknown }>(handle: T): T {
      open.push(handle)
      return handle
    },
    store(path: string, options: Omit<SqliteRunStoreOptions, 'path'> = {}): SqliteRunStore {
      const s = new SqliteRunStore({ path, ...options })
      open.push(s)
      return s
    },
    /**
     * A store and the connection it writes with. `PRAGMA max_page_count`
     * holds for the connection that sets it, so a limit on the file's size
     * has to be set on the store's: the connection its opening runs its
     * first `exec` on.
     */
    storeAndConnection(path: string, options: Omit<SqliteRunStoreOptions, 'path'> = {}): { store: SqliteRunStore; db: DatabaseSync } {
      const exec = DatabaseSync.prototype.exec
      let db: DatabaseSync | undefined
      DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string) {
        db ??= this
        return exec.call(this, sql)
      }
      let s: SqliteRunStore
      try {
        s = new SqliteRunStore({ path, ...options })
        open.push(s)
      } finally {
        DatabaseSync.prototype.exec = exec
      }
      if (!db) throw new Error('the store opened its file without DatabaseSync#exec')
      return { store: s, db }
    },
    /** A plain connection to the file, as another process's would be. */
    raw(path: string): DatabaseSync {
      const db = new DatabaseSync(path)
      db.exec('PRAGMA busy_timeout = 5000')
      open.push(db)
      return db
    },
  }
}

/** Runs `sql` (a trigger, say) on the file through a connection of its own, as another process would. */
export function onFile(path: string, sql: string): void {
  const db = new DatabaseSync(path)
  try {
    db.exec(sql)
  } finally {
    db.close()
  }
}

/**
 * What each schema version added, undone: `asVersion` turns a file this
 * release wrote back into what an earlier one wrote, to test its migration.
 */
const UNDO: Record<number, string> = {
  18: 'DROP TABLE svc_updates;',
  17: 'DROP TABLE svc_signals;',
  // Version 16 dropped what these lines of version 15 made: they make it again.
  16: `DROP TRIGGER svc_runs_tags_delete; DROP TRIGGER svc_runs_metadata_delete;
    ${SEARCH_TABLES.split('\n')
      .filter((line) => /svc_run_tags_by_run |svc_runs_tags_insert |svc_runs_search_delete /.test(line))
      .join('\n')}`,
  15: 'DROP TRIGGER svc_runs_tags_insert; DROP TRIGGER svc_runs_metadata_insert; DROP TRIGGER svc_runs_search_delete; DROP TABLE svc_run_tags; DROP TABLE svc_run_metadata; DROP INDEX svc_runs_by_created; ALTER TABLE svc_runs DROP COLUMN created_at;',
  14: 'DROP TABLE svc_schedules;',
  13: 'DROP INDEX svc_timers_by_run;',
  11: 'DROP INDEX runs_by_task_finish;',
  10: 'DROP TABLE processes;',
  9: 'DROP INDEX runs_by_event_wait;',
  8: 'DROP TABLE changes; DROP TABLE change_listeners;',
  7: 'DROP INDEX events_by_name_seq;',
  6: 'DROP TABLE events;',
  5: `ALTER TABLE owners DROP COLUMN shared; DROP TABLE wakes; DROP TABLE cron_ticks; DROP INDEX timers_by_due_at;
    ALTER TABLE timers DROP COLUMN claim_until; ALTER TABLE timers DROP COLUMN claimed_by; ALTER TABLE timers DROP COLUMN due_at;
    ALTER TABLE runs DROP COLUMN lease_until; ALTER TABLE runs DROP COLUMN lease_owner;`,
  4: 'ALTER TABLE runs DROP COLUMN owner_fence;',
  3: 'ALTER TABLE runs DROP COLUMN owner; DROP TABLE owners;',
}

/** Undoes version 12: svc's tables and indexes back to the plain names of earlier releases. */
function unprefix(db: DatabaseSync): void {
  const plain = (name: string) => name.slice('svc_'.length)
  const named = (type: string) =>
    db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = ? AND sql IS NOT NULL AND substr(name, 1, 4) = 'svc_'`).all(type) as {
      name: string
      sql: string
    }[]
  for (const { name } of named('table')) db.exec(`ALTER TABLE "${name}" RENAME TO "${plain(name)}"`)
  for (const { name, sql } of named('index')) {
    db.exec(`DROP INDEX "${name}"`)
    db.exec(sql.replace(name, plain(name)))
  }
}

/** Makes the closed file at `path` what schema `version` (2 or later) wrote. */
export function asVersion(path: string, version: number): void {
  const db = new DatabaseSync(path)
  const current = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
  for (let v = current; v > version; v--) {
    if (v === 12) unprefix(db)
    else db.exec(UNDO[v])
  }
  db.exec(`PRAGMA user_version = ${version}`)
  db.close()
}
