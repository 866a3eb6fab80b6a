// One engine across processes on one SQLite file that every server opens
// with `shared: true` (processes-contract.ts), as processes on one Postgres
// database share it. The effects go to a second file: recording one never
// waits for the runs file's write lock, nor holds it from the stores.
import { dirname, join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { SqliteRunStore } from '../../src/node.ts'
import { type Effect, processesContract } from '../tasks/processes-contract.ts'
import { sqliteFiles } from './_sqlite-files.ts'

// Only the paths: the suite's store and connections stay open across its cases.
const { dbFile } = sqliteFiles('svc-sqlite-processes-')

processesContract('SqliteRunStore (shared file)', async () => {
  const runs = dbFile()
  const effects = join(dirname(runs), 'effects.db')
  // Opened shared too: processes open a file one way at a time. With no
  // engine on it, this store claims nothing.
  const store = new SqliteRunStore({ path: runs, shared: true })
  const log = new DatabaseSync(effects)
  log.exec(`PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000;
    CREATE TABLE effects (run_id TEXT NOT NULL, step TEXT NOT NULL, pid INTEGER NOT NULL)`)
  const select = log.prepare('SELECT run_id, step, pid FROM effects')
  return {
    runs,
    effects,
    store,
    ran: async () => select.all() as unknown as Effect[],
    async unfinished() {
      const db = new DatabaseSync(runs)
      try {
        db.exec('PRAGMA busy_timeout = 5000')
        const unfinished = db
          .prepare(
            `SELECT id, status, owner, lease_owner, lease_until, json_extract(record, '$.suspended') AS suspended, ? AS now
            FROM svc_runs WHERE status <> 'completed'`,
          )
          .all(Date.now())
        const timers = db.prepare('SELECT id, due_at, claimed_by, claim_until FROM svc_timers').all()
        return `unfinished: ${JSON.stringify(unfinished)}\ntimers: ${JSON.stringify(timers)}`
      } finally {
        db.close()
      }
    },
    async close() {
      await store.close()
      log.close()
    },
  }
})
