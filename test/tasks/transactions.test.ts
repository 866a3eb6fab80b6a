/**
 * `ctx.step.transaction` on SQLite (the contract, then what the SQL
 * handle allows) and on the memory store, which has no database to share.
 * Postgres runs the contract in test/postgres/transactions.test.ts, the
 * Durable Object in test/targets/cloudflare-transactions.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { firstKeyword } from '../../src/runtime/tasks/sql/transaction.ts'
import type { SqlTransaction } from '../../src/types.ts'
import { sqliteFiles } from '../node/_sqlite-files.ts'
import { finished, runtime, task } from './_helpers.ts'
import { sqliteItems, transactionContract } from './transaction-contract.ts'

const { dbFile, store, raw } = sqliteFiles('svc-transactions-')

function sqlite(options: { shared?: true } = {}) {
  const path = dbFile()
  const items = sqliteItems(raw(path))
  return { store: store(path, options), ids: items.ids, insert: items.insert }
}

transactionContract('SqliteRunStore (file)', { open: async () => sqlite() })
transactionContract('SqliteRunStore (shared file)', { open: async () => sqlite({ shared: true }) })

describe('the SQL handle of a transactional step on SQLite', () => {
  it("keeps the app's own events, runs and steps tables apart from svc's, which are named svc_…", async () => {
    const { store: s } = sqlite()
    const order = task('orders.log', async (ctx) => {
      await ctx.step.transaction('log', (tx: SqlTransaction) => {
        for (const table of ['events', 'runs', 'steps']) tx.run(`CREATE TABLE IF NOT EXISTS ${table} (what TEXT NOT NULL)`)
        tx.run('INSERT INTO events (what) VALUES (?)', 'logged')
        tx.run('INSERT INTO runs (what) VALUES (?)', 'mine')
      })
      return ctx.step.transaction('clear', (tx: SqlTransaction) => {
        const cleared = tx.run('DELETE FROM events').changes + tx.run('DELETE FROM steps').changes
        return { cleared, runs: tx.query<{ what: string }>('SELECT what FROM runs').map((row) => row.what) }
      })
    })
    const rt = runtime([order], { store: s })
    await rt.sendEvent('order.paid', { n: 1 }, { id: 'paid-1' })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.log')).id))
    expect(run).toMatchObject({ status: 'completed', result: { cleared: 1, runs: ['mine'] } })
    // svc's event, run and steps are where they were.
    expect((await rt.listEvents()).events.map((event) => event.id)).toEqual(['paid-1'])
    expect(Object.keys((await s.getRun(run.id))!.steps)).toEqual(['log', 'clear'])
    expect((await rt.listRuns()).map((r) => r.id)).toEqual([run.id])
  })

  it("reads its own writes, and the rows it returns are the step's output", async () => {
    const { store: s, ids } = sqlite()
    const order = task('orders.total', async (ctx) =>
      ctx.step.transaction('add', (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?), (?)', 'a', 'b')
        return tx.query<{ n: number }>('SELECT count(*) AS n FROM items')[0].n
      }),
    )
    const rt = runtime([order], { store: s })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.total')).id))
    expect(run).toMatchObject({ status: 'completed', result: 2 })
    expect(await ids()).toEqual(['a', 'b'])
  })

  it('an async function keeps its transaction open across awaits while 100 other runs write: all of them land, none inside it', async () => {
    const { store: s, ids } = sqlite()
    const path = s.path
    let seenInside: string[] | undefined
    const order = task('orders.async', async (ctx) =>
      ctx.step.transaction('save', async (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?)', 'before-await')
        // Long enough for the batch to come due, and for the other runs to ask to write.
        await new Promise((resolve) => setTimeout(resolve, 50))
        tx.run('INSERT INTO items (id) VALUES (?)', 'after-await')
        // Another connection sees nothing of the open transaction.
        const other = raw(path)
        seenInside = other
          .prepare('SELECT id FROM items')
          .all()
          .map((row) => row.id as string)
        return tx.query<{ n: number }>('SELECT count(*) AS n FROM items')[0].n
      }),
    )
    const busy = task('orders.busy', async (ctx) => ctx.step.run('one', () => ctx.input.i))
    const rt = runtime([order, busy], { store: s })
    const { id } = await rt.trigger('orders.async')
    const others = await Promise.all(Array.from({ length: 100 }, (_, i) => rt.trigger('orders.busy', { i })))
    const [run, ...done] = await Promise.all([id, ...others.map((other) => other.id)].map((runId) => finished(rt.waitForRun(runId))))
    expect(run).toMatchObject({ status: 'completed', result: 2 })
    expect(run.steps.save).toMatchObject({ status: 'completed', kind: 'transaction', output: 2 })
    expect(seenInside).toEqual([])
    expect(await ids()).toEqual(['before-await', 'after-await'])
    expect(done.map((other) => [other.status, other.result])).toEqual(Array.from({ length: 100 }, (_, i) => ['completed', i]))
  })

  it("a throw after an await rolls back its writes and its record, and the attempt is retried; other runs' writes meanwhile stay", async () => {
    const { store: s, ids } = sqlite()
    let calls = 0
    const order = task(
      'orders.async',
      async (ctx) =>
        ctx.step.transaction('save', async (tx: SqlTransaction) => {
          calls++
          tx.run('INSERT INTO items (id) VALUES (?)', `try-${calls}`)
          await new Promise((resolve) => setTimeout(resolve, 10))
          if (calls === 1) throw new Error('the payment service said no')
          return calls
        }),
      { route: { retries: 1 } },
    )
    const busy = task('orders.busy', async (ctx) => ctx.step.run('one', () => ctx.input.i))
    const rt = runtime([order, busy], { store: s })
    const { id } = await rt.trigger('orders.async')
    // Asked for while the first attempt's transaction is open, and held until it is rolled back.
    const others = await Promise.all(Array.from({ length: 20 }, (_, i) => rt.trigger('orders.busy', { i })))
    const run = await finished(rt.waitForRun(id))
    expect(run).toMatchObject({ status: 'completed', result: 2 })
    expect(run.attempts.map((attempt) => attempt.error)).toEqual(['the payment service said no', undefined])
    expect(await ids()).toEqual(['try-2'])
    await Promise.all(others.map((other) => finished(rt.waitForRun(other.id))))
    const steps = raw(s.path).prepare("SELECT count(*) AS n FROM svc_steps WHERE key = 'one'").get() as { n: number }
    expect(steps.n).toBe(20)
  })

  it('an async function still running past transactionTimeoutMs fails the step, rolled back, and its later statements are refused', async () => {
    const path = dbFile()
    const items = sqliteItems(raw(path))
    const s = store(path, { transactionTimeoutMs: 50 })
    let late: unknown
    let settled!: () => void
    const after = new Promise<void>((resolve) => (settled = resolve))
    const order = task('orders.slow', async (ctx) =>
      ctx.step.transaction('save', async (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?)', 'slow')
        await new Promise((resolve) => setTimeout(resolve, 150))
        try {
          tx.run('INSERT INTO items (id) VALUES (?)', 'too-late')
        } catch (error) {
          late = error
        }
        settled()
      }),
    )
    const rt = runtime([order], { store: s })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.slow')).id))
    expect(run.status).toBe('failed')
    expect(run.attempts[0].error).toMatch(/ctx\.step\.transaction\("save"\): its function was still running 50 ms after it began/)
    expect(run.steps).toEqual({})
    await after
    expect(String(late)).toMatch(/its transaction is over/)
    expect(await items.ids()).toEqual([])
  })

  it('a step awaited inside the function waits for the transaction, which fails at the time bound rather than hanging', async () => {
    const path = dbFile()
    const items = sqliteItems(raw(path))
    const s = store(path, { transactionTimeoutMs: 100 })
    const order = task('orders.nested', async (ctx) =>
      ctx.step.transaction('save', async (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?)', 'outer')
        return ctx.step.run('inner', () => 1)
      }),
    )
    const rt = runtime([order], { store: s })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.nested')).id))
    expect(run.status).toBe('failed')
    expect(run.attempts[0].error).toMatch(/ctx\.step\.transaction\("save"\): its function was still running 100 ms after it began/)
    expect(await items.ids()).toEqual([])
  })

  it("refuses statements that would end the step's transaction, and the run's other writes stay", async () => {
    const { store: s, ids } = sqlite()
    const refused: string[] = []
    const order = task('orders.commit', async (ctx) => {
      await ctx.step.run('first', () => 1)
      return ctx.step.transaction('save', (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?)', 'kept')
        for (const sql of ['COMMIT', '  /* a note */ -- another\n rollback', 'END TRANSACTION', 'savepoint x', 'RELEASE x', 'begin']) {
          try {
            tx.run(sql)
          } catch (error) {
            refused.push((error as Error).message)
          }
        }
        return 'saved'
      })
    })
    const rt = runtime([order], { store: s })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.commit')).id))
    expect(run).toMatchObject({ status: 'completed', result: 'saved' })
    expect(refused).toHaveLength(6)
    expect(refused[0]).toMatch(/COMMIT is not allowed inside a transactional step/)
    expect(refused[1]).toMatch(/ROLLBACK is not allowed/)
    expect(await ids()).toEqual(['kept'])
    expect(Object.keys(run.steps)).toEqual(['first', 'save'])
  })

  it("a SQL error in the app's statement rolls the step back and fails the attempt with it", async () => {
    const { store: s, ids } = sqlite()
    const order = task('orders.dup', async (ctx) =>
      ctx.step.transaction('save', (tx: SqlTransaction) => {
        tx.run('INSERT INTO items (id) VALUES (?)', 'x')
        tx.run('INSERT INTO items (id) VALUES (?)', 'x')
      }),
    )
    const rt = runtime([order], { store: s })
    const run = await finished(rt.waitForRun((await rt.trigger('orders.dup')).id))
    expect(run.status).toBe('failed')
    expect(run.attempts[0].error).toMatch(/UNIQUE constraint failed: items\.id/)
    expect(await ids()).toEqual([])
  })

  it("finds a statement's first keyword past whitespace and comments, in one pass", () => {
    expect(firstKeyword('  -- c\n/* d */ Commit;')).toBe('commit')
    expect(firstKeyword('/* unterminated')).toBe('')
    expect(firstKeyword('INSERT INTO t VALUES (1)')).toBe('insert')
    // Many comment openers on one line: a backtracking pattern would take exponential time here.
    expect(firstKeyword(`${'-- '.repeat(200_000)}\nrelease x`)).toBe('release')
  })
})

describe('a transactional step on the memory store', () => {
  it('fails the attempt with an error naming the stores that support it', async () => {
    const order = task('orders.memory', async (ctx) => ctx.step.transaction('save', () => 1))
    const rt = runtime([order])
    const run = await finished(rt.waitForRun((await rt.trigger('orders.memory')).id))
    expect(run.status).toBe('failed')
    expect(run.attempts[0].error).toMatch(/ctx\.step\.transaction\("save"\): the run store \(MemoryRunStore\) keeps runs in memory/)
    expect(run.attempts[0].error).toMatch(/SQLite .*Postgres .*Durable Object/)
  })
})
