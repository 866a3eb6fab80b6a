// A statement of PostgresRunStore that Postgres ends as a deadlock's victim
// is run again, so neither side of the deadlock fails. The deadlock is the
// one three processes met at random: a run's end locks its row, then
// run_counts (the count trigger); an insert of the same idempotency key
// locks run_counts, then waits on that row. Here a connection of the test
// plays the insert's side, in that order, on purpose.
import postgres from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { createDatabase } from './_pg.ts'

let url: string
let store: PostgresRunStore
let sql: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('deadlock')
  store = new PostgresRunStore({ url })
  await store.ready()
  sql = postgres(url, { onnotice: () => {} })
})
afterAll(async () => {
  await store.close()
  await sql.end()
})

it("a run's end chosen as a deadlock's victim is written again once the other side commits", async () => {
  const run = await store.createRun(makeRun({ status: 'running' }))
  const other = await sql.reserve()
  try {
    await other`BEGIN`
    await other`SELECT live FROM svc.run_counts FOR UPDATE`
    // Locks the run's row, then waits on run_counts in the count trigger.
    const ending = store.updateRun(run.id, { status: 'completed', result: 'done' })
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Waits on the run's row: a cycle. The end, waiting longer, is the one
    // Postgres's check (after deadlock_timeout, 1 s) finds and aborts.
    await other`UPDATE svc.runs SET record = record WHERE id = ${run.id}`
    await other`COMMIT`
    expect(await ending).toMatchObject({ status: 'completed', result: 'done' })
  } finally {
    other.release()
  }
  expect(await store.getRun(run.id)).toMatchObject({ status: 'completed', result: 'done' })
})
