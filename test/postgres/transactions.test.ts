// `ctx.step.transaction` on PostgresRunStore: the contract, with the app's
// table in the store's database and the `postgres` driver's transaction as
// the step's `tx`.
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore, type PostgresTransaction } from '../../src/postgres.ts'
import { finished, runtime, task } from '../tasks/_helpers.ts'
import { postgresItems, transactionContract } from '../tasks/transaction-contract.ts'
import { createDatabase } from './_pg.ts'

let url: string
let db: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('transactions')
  db = postgres(url, { onnotice: () => {} })
})
afterAll(() => db.end())

let schemas = 0
const open: PostgresRunStore[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})
function store(): PostgresRunStore {
  const s = new PostgresRunStore({ url, schema: `tx${++schemas}` })
  open.push(s)
  return s
}

transactionContract('PostgresRunStore', { open: async () => ({ store: store(), ...(await postgresItems(db)) }) })

describe('a transactional step on Postgres', () => {
  it("is one transaction of the store's database: it reads its own writes, which others see only once it commits", async () => {
    await db`CREATE TABLE IF NOT EXISTS ledger (id text PRIMARY KEY, amount int)`
    const seenOutside: number[] = []
    const order = task('orders.ledger', async (ctx) =>
      ctx.step.transaction('book', async (tx: PostgresTransaction) => {
        await tx`INSERT INTO ledger (id, amount) VALUES (${ctx.input.id}, 5)`
        const [inside] = await tx`SELECT count(*)::int AS n FROM ledger WHERE id = ${ctx.input.id}`
        const [outside] = await db`SELECT count(*)::int AS n FROM ledger WHERE id = ${ctx.input.id}`
        seenOutside.push(outside.n as number)
        return inside.n as number
      }),
    )
    const rt = runtime([order], { store: store() })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.ledger', { id: 'L-1' })).id))
    expect(run).toMatchObject({ status: 'completed', result: 1 })
    expect(seenOutside).toEqual([0])
    expect((await db`SELECT amount FROM ledger WHERE id = 'L-1'`).map((row) => row.amount)).toEqual([5])
  })
})
