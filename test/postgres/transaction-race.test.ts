// Exactly once, on its own: two processes racing one transactional step of
// one run. The first is stopped (SIGSTOP) inside the step's transaction,
// with the app's row written; its lease lapses, the second claims the run
// and runs the step again, waiting on the row the stopped transaction
// holds. Once the first goes on (SIGCONT), its record finds the run taken
// over and it all rolls back; the second's commits. One row, one record.
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startChild } from '../tasks/_child-server.ts'
import { until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

const SCRIPT = fileURLToPath(new URL('../fixtures/cluster/server.ts', import.meta.url))
const LEASE_MS = 1000

let url: string
let db: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('transaction_race')
  db = postgres(url, { onnotice: () => {} })
  await db`CREATE TABLE effects (run_id text NOT NULL, step text NOT NULL, pid integer NOT NULL)`
})
afterAll(() => db.end())

it('a process stopped inside a transactional step, whose run another process takes over, commits nothing: one row, one record', async () => {
  const start = () => startChild(SCRIPT, [url, url, String(LEASE_MS), '200'])
  const [a, b] = [await start(), await start()]
  const id = await a.call<string>('trigger', { task: 'ledger.held', payload: { ms: 2000 } })
  await until(
    async () => (await db`SELECT 1 FROM effects WHERE run_id = ${id} AND step = 'in-transaction' AND pid = ${a.pid}`).length > 0,
    15_000,
  )
  process.kill(a.pid, 'SIGSTOP')
  try {
    // Its lease lapses: the other process claims the run (the fence moves on).
    await until(async () => {
      const [run] = await db<{ fence: string }[]>`SELECT lease_fence::text AS fence FROM svc.runs WHERE id = ${id}`
      return Number(run.fence) > 1
    }, 15_000)
  } finally {
    process.kill(a.pid, 'SIGCONT')
  }
  const done = await until(async () => {
    const [run] = await db<{ status: string; result: unknown }[]>`SELECT status, record->'result' AS result FROM svc.runs WHERE id = ${id}`
    return run.status === 'completed' && run
  }, 20_000)
  expect(done.result).toEqual({ pid: b.pid })
  expect(await db`SELECT pid FROM ledger WHERE run_id = ${id}`).toEqual([{ pid: b.pid }])
  const steps = await db<{ output: unknown }[]>`SELECT record->'output' AS output FROM svc.steps WHERE run_id = ${id} AND key = 'book'`
  expect(steps).toEqual([{ output: { pid: b.pid } }])
  // Both ran the step's body; only the second's stands.
  expect(
    (await db`SELECT pid FROM effects WHERE run_id = ${id} AND step = 'in-transaction' ORDER BY pid`).map((row) => row.pid).sort(),
  ).toEqual([a.pid, b.pid].sort())
  await Promise.all([a.close(), b.close()])
}, 60_000)
