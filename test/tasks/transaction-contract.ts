/**
 * `ctx.step.transaction` on a store whose database the app shares: the
 * app's writes and the step's record commit together or not at all. Every
 * store with `transactStep` runs this suite through the task engine; how
 * the app writes through the step's `tx`, and reads its table back, is
 * the harness's (SQL on SQLite, the `postgres` driver on Postgres).
 */
import type { DatabaseSync } from 'node:sqlite'
import type { Sql } from 'postgres'
import { describe, expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import type { SqlTransaction, StepInfo } from '../../src/types.ts'
import { finished, runtime, task } from './_helpers.ts'

export interface TransactionHarness {
  /**
   * A store on a fresh database with a table of the app's: `insert` writes
   * an id into it through a step's `tx` (a value, or a promise where the
   * store allows one), `ids` reads them back through another connection.
   */
  open(): Promise<{ store: RunStore; insert(tx: unknown, id: string): unknown; ids(): Promise<string[]> }>
}

/** The app's table `items` in a SQLite file: written through a step's `SqlTransaction`, read through `db`, another connection. */
export function sqliteItems(db: DatabaseSync): { insert(tx: unknown, id: string): number; ids(): Promise<string[]> } {
  db.exec('CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY)')
  return {
    insert: (tx, id) => (tx as SqlTransaction).run('INSERT INTO items (id) VALUES (?)', id).changes,
    ids: async () =>
      db
        .prepare('SELECT id FROM items ORDER BY rowid')
        .all()
        .map((row) => row.id as string),
  }
}

let pgTables = 0

/** A fresh table of the app's in Postgres: written through a step's `postgres` transaction, read through `db`. */
export async function postgresItems(db: Sql): Promise<{ insert(tx: unknown, id: string): Promise<unknown>; ids(): Promise<string[]> }> {
  const table = `items_${process.pid}_${++pgTables}`
  await db`CREATE TABLE ${db(table)} (seq serial, id text PRIMARY KEY)`
  return {
    insert: (tx, id) => (tx as Sql)`INSERT INTO ${db(table)} (id) VALUES (${id})`,
    ids: async () => (await db`SELECT id FROM ${db(table)} ORDER BY seq`).map((row) => row.id as string),
  }
}

export function transactionContract(name: string, harness: TransactionHarness): void {
  describe(`transactional steps: ${name}`, () => {
    it("the app's write and the step's record commit together; a replay returns the output and runs nothing", async () => {
      const { store, ids, insert } = await harness.open()
      let calls = 0
      const order = task('orders.record', async (ctx) => {
        const saved = await ctx.step.transaction('save', (tx, step: StepInfo) => {
          calls++
          const done = insert(tx, ctx.input.id)
          const output = { saved: ctx.input.id, key: step.idempotencyKey }
          return done instanceof Promise ? done.then(() => output) : output
        })
        // The run suspends here, and its next execution replays the step.
        await ctx.step.sleep('pause', 0.05)
        return saved
      })
      const rt = runtime([order], { store })
      const { id } = await rt.trigger('orders.record', { id: 'o-1' })
      const run = await finished(rt.waitForRun(id))
      expect(run.status).toBe('completed')
      expect(run.result).toEqual({ saved: 'o-1', key: `svc:${id}:save` })
      expect(calls).toBe(1)
      expect(await ids()).toEqual(['o-1'])
      expect(run.steps.save).toMatchObject({ status: 'completed', kind: 'transaction', output: { saved: 'o-1', key: `svc:${id}:save` } })
      expect(run.steps.save.durationMs).toBeGreaterThanOrEqual(0)
    })

    it('a failure rolls back the writes and the record, and fails the attempt, which is retried', async () => {
      const { store, ids, insert } = await harness.open()
      let calls = 0
      const order = task(
        'orders.record',
        async (ctx) =>
          ctx.step.transaction('save', (tx) => {
            calls++
            const done = insert(tx, ctx.input.id)
            const after = () => {
              if (calls === 1) throw new Error('the payment service said no')
              return calls
            }
            return done instanceof Promise ? done.then(after) : after()
          }),
        { route: { retries: 1 } },
      )
      const rt = runtime([order], { store })
      const { id } = await rt.trigger('orders.record', { id: 'o-2' })
      const run = await finished(rt.waitForRun(id))
      expect(run.status).toBe('completed')
      expect(run.result).toBe(2)
      expect(run.attempts.map((attempt) => attempt.error)).toEqual(['the payment service said no', undefined])
      expect(await ids()).toEqual(['o-2'])
    })

    it('an output that cannot be stored rolls the writes back', async () => {
      const { store, ids, insert } = await harness.open()
      const order = task('orders.record', async (ctx) =>
        ctx.step.transaction('save', (tx) => {
          const done = insert(tx, ctx.input.id)
          const output = { total: 10n }
          return done instanceof Promise ? done.then(() => output) : output
        }),
      )
      const rt = runtime([order], { store })
      const { id } = await rt.trigger('orders.record', { id: 'o-3' })
      const run = await finished(rt.waitForRun(id))
      expect(run.status).toBe('failed')
      expect(run.attempts[0].error).toMatch(/ctx\.step\.transaction\("save"\) returned a value that cannot be stored as JSON/)
      expect(run.steps).toEqual({})
      expect(await ids()).toEqual([])
    })

    it('steps of many runs at once each commit once', async () => {
      const { store, ids, insert } = await harness.open()
      const order = task('orders.record', async (ctx) => {
        await ctx.step.transaction('save', (tx) => insert(tx, ctx.input.id))
        return ctx.step.run('after', () => ctx.input.id)
      })
      const rt = runtime([order], { store })
      const started = await Promise.all(Array.from({ length: 40 }, (_, i) => rt.trigger('orders.record', { id: `m-${i}` })))
      const runs = await Promise.all(started.map((run) => finished(rt.waitForRun(run.id))))
      expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'completed'))
      expect((await ids()).sort()).toEqual(started.map((_, i) => `m-${i}`).sort())
    })
  })
}
