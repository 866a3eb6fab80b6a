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

export function sqliteFiles(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  const open: { close(): void }[] = []
  afterEach(() => {
    for (const handle of open.splice(0).reverse()) handle.close()
  })
  return {
    /** A new file's path. */
    dbFile: () => join(dir, `runs-${++files}.db`),
    /** Closes `handle` after the test. */
    track<T extends { close(): void }>(handle: T): T {
      open.push(handle)
      return handle
    },
    store(path: string, options: Omit<SqliteRunStoreOptions, 'path'> = {}): SqliteRunStore {
      const s = new SqliteRunStore({ path, ...options })
      open.push(s)
      return s
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
