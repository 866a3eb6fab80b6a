// `ctx.step.transaction` on PostgresRunStore: the contract, with the app's
// table in the store's database and the `postgres` driver's transaction as
// the step's `tx`.
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore, type PostgresTransaction } from '../../src/postgres.ts'
import { makeRun } from '../tasks/store-contract.ts'
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
  it('is recorded once: a second execution of a recorded step fails, and its work rolls back, with a fence or without', async () => {
    const s = store()
    const items = await postgresItems(db)
    const record = (output: string) => ({ status: 'completed' as const, kind: 'transaction' as const, output })
    const run = await s.createRun(makeRun({ status: 'running' }))
    expect(await s.transactStep(run.id, 'book', (tx) => items.insert(tx, 'first').then(() => 'first'), record)).toBe('first')
    // Unfenced: a store that holds no lease on the run, as a second execution racing the first would be.
    await expect(s.transactStep(run.id, 'book', (tx) => items.insert(tx, 'second').then(() => 'second'), record)).rejects.toThrow(
      /step "book" of run ".*" is recorded already; this execution's transaction is rolled back/,
    )
    // Fenced: the store holds the run's lease, and the step is recorded all the same.
    const held = await s.createRun(makeRun({ status: 'running' }))
    expect(await s.shared.acquireLease('me', held.id)).toBe(true)
    await s.transactStep(held.id, 'book', (tx) => items.insert(tx, 'held-first').then(() => 'first'), record)
    await expect(
      s.transactStep(held.id, 'book', (tx) => items.insert(tx, 'held-second').then(() => 'second'), record),
    ).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    expect(await items.ids()).toEqual(['first', 'held-first'])
    expect((await s.getRun(run.id))!.steps.book).toMatchObject({ output: 'first' })
    expect((await s.getRun(held.id))!.steps.book).toMatchObject({ output: 'first' })
  })

  it('whose connection is terminated mid-statement is interrupted, not failed, and commits on its next run; the process and the pool carry on', async () => {
    const s = store()
    const runs: number[] = []
    const nap = task('orders.nap', async (ctx) =>
      ctx.step.transaction('book', async (tx: PostgresTransaction) => {
        runs.push(ctx.attempt)
        const [{ pid }] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`
        if (runs.length === 1) {
          // Another session ends this one while its statement runs.
          setTimeout(() => db`SELECT pg_terminate_backend(${pid})`.then(() => {}), 100)
          await tx`SELECT pg_sleep(2)`
        }
        return 'booked'
      }),
    )
    const rt = runtime([nap], { store: s })
    const { id } = await rt.trigger('orders.nap')
    const done = await finished(rt.waitForRun(id))
    expect(done).toMatchObject({ status: 'completed', result: 'booked' })
    // The same attempt twice: the first was interrupted, and used no retry.
    expect(runs).toEqual([1, 1])
    expect(done.attempts.map((attempt) => attempt.index)).toEqual([1])
    // Every connection of the pool still works, the terminated one connected again.
    await Promise.all(Array.from({ length: 12 }, () => s.size()))
  })

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

  it("commits each of 400 runs' steps once, among reads of the same runs on the same pool", async () => {
    const s = store()
    const items = await postgresItems(db)
    const runs = Array.from({ length: 400 }, () => makeRun({ status: 'running' }))
    await Promise.all(runs.map((run) => s.createRun(run)))
    const record = () => ({ status: 'completed' as const, kind: 'transaction' as const })
    await Promise.all(
      runs.flatMap((run) => [
        s.getRun(run.id),
        s.listRuns({ limit: 5 }),
        s.transactStep(run.id, 'book', (tx) => items.insert(tx, run.id), record),
        s.getRun(run.id),
        s.listRuns({ limit: 5 }),
      ]),
    )
    expect((await items.ids()).sort()).toEqual(runs.map((run) => run.id).sort())
    for (const run of runs) expect(Object.keys((await s.getRun(run.id))!.steps)).toEqual(['book'])
  })

  it("refuses the calls that would leave the step's transaction or its connection", async () => {
    const refused: string[] = []
    const order = task('orders.escape', async (ctx) =>
      ctx.step.transaction('book', async (tx: PostgresTransaction) => {
        for (const call of [
          () => tx.begin(async () => {}),
          () => (tx as unknown as { release(): void }).release(),
          () => tx.reserve(),
          () => tx.end(),
        ]) {
          try {
            await call()
          } catch (error) {
            refused.push((error as Error).message)
          }
        }
        return (await tx`SELECT 1 AS one`)[0].one as number
      }),
    )
    const rt = runtime([order], { store: store() })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.escape')).id))
    expect(run).toMatchObject({ status: 'completed', result: 1 })
    expect(refused).toHaveLength(4)
    expect(refused[0]).toMatch(/ctx\.step\.transaction\("book"\): tx\.begin\(\) is not available inside a transactional step/)
  })
})
