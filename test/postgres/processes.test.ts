// One engine across processes on PostgresRunStore (processes-contract.ts):
// the servers share one database of the run's embedded Postgres and record
// their effects in a table of it.
import postgres from 'postgres'
import { PostgresRunStore } from '../../src/postgres.ts'
import { type Effect, processesContract } from '../tasks/processes-contract.ts'
import { createDatabase } from './_pg.ts'

processesContract('PostgresRunStore', async () => {
  const url = await createDatabase('processes')
  const store = new PostgresRunStore({ url })
  await store.ready()
  const db = postgres(url, { onnotice: () => {} })
  await db`CREATE TABLE effects (run_id text NOT NULL, step text NOT NULL, pid integer NOT NULL)`
  return {
    runs: url,
    effects: url,
    store,
    ran: () => db<Effect[]>`SELECT run_id, step, pid FROM effects`,
    async unfinished() {
      const runs =
        await db`SELECT id, status, lease_owner, lease_expires_at, record->'suspended' AS suspended, now() AS now FROM svc.runs WHERE status <> 'completed'`
      const timers = await db`SELECT id, due_at, claimed_by, claim_expires_at FROM svc.timers`
      return `unfinished: ${JSON.stringify(runs)}\ntimers: ${JSON.stringify(timers)}`
    },
    async close() {
      await store.close()
      await db.end()
    },
  }
})
