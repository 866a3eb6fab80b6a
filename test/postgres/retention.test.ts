import postgres from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { retentionSoak } from '../tasks/_retention-soak.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('retention')
})

const stores: PostgresRunStore[] = []
afterAll(() => Promise.all(stores.map((store) => store.close())))

it('soak: a Postgres store stays bounded under continuous runs with a 1 s retention, its steps too', async () => {
  const store = new PostgresRunStore({ url, schema: 'soak' })
  stores.push(store)
  const figures = await retentionSoak(store)
  // Never more than what was triggered in the last 5 s (of a 10 s soak): older runs are pruned as it goes.
  expect(figures.excess).toBe(0)
  expect(figures.last).toBeLessThan(figures.triggered / 2)
  // The rows of the tables agree with the store's counts: nothing is left behind.
  const sql = postgres(url, { onnotice: () => {} })
  try {
    // One statement, one snapshot of the three tables.
    const [{ runs, counted, steps }] = await sql<{ runs: number; counted: number; steps: number }[]>`SELECT
      (SELECT count(*)::int FROM soak.runs) AS runs,
      (SELECT sum(total)::int FROM soak.run_counts) AS counted,
      (SELECT count(*)::int FROM soak.steps) AS steps`
    expect(counted).toBe(runs)
    expect(runs).toBeLessThan(figures.triggered / 2)
    expect(steps).toBeLessThanOrEqual(runs)
  } finally {
    await sql.end()
  }
}, 30_000)
