// Listing events on PostgresRunStore beyond the contract: stores on one schema, each with
// connections of its own as separate processes have, noting what one event did at once;
// and a schema an earlier release left at version 6, which gains the columns of what
// events did with its events kept.
import postgres from 'postgres'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { EVENT_WAIT_NAME, migrate } from '../../src/postgres/migrations.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('event_list')
})

let schemas = 0
const freshSchema = () => `s${++schemas}`
const open: PostgresRunStore[] = []
function store(schema: string): PostgresRunStore {
  const s = new PostgresRunStore({ url, schema })
  open.push(s)
  return s
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

describe('PostgresRunStore event listing', () => {
  it('of stores on one schema noting what one event did at once, every id lands once', async () => {
    const schema = freshSchema()
    const stores = [store(schema), store(schema)]
    await stores[0].putEvent({ id: 'paid', name: 'order.paid', time: new Date().toISOString() })
    // Several connections per store open first, so the notes below run side by side.
    await Promise.all(stores.flatMap((s) => Array.from({ length: 6 }, () => s.listEvents({ limit: 1 }))))
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        stores[i % 2].noteEventEffects('paid', { runs: [`r${i % 12}`], resumed: i % 3 === 0 ? [`w${i % 4}`] : [] }),
      ),
    )
    for (const s of stores) {
      const [event] = (await s.listEvents({ limit: 1 })).events
      expect([...event.runs!].sort()).toEqual(Array.from({ length: 12 }, (_, i) => `r${i}`).sort())
      expect([...event.resumed!].sort()).toEqual(['w0', 'w1', 'w2', 'w3'])
    }
  })

  it('a schema at version 6 gains what events did, its events kept and listed', async () => {
    const schema = freshSchema()
    const sql = postgres(url, { onnotice: () => {} })
    const time = new Date().toISOString()
    try {
      await migrate(sql, schema, 'test', 6)
      await sql`INSERT INTO ${sql(schema)}.events (id, name, time, data) VALUES ('old', 'order.paid', ${time}::timestamptz, '{"n":1}')`
    } finally {
      await sql.end()
    }
    const s = store(schema)
    expect((await s.listEvents({ limit: 5, name: 'order.paid' })).events).toEqual([{ id: 'old', name: 'order.paid', data: { n: 1 }, time }])
    await s.noteEventEffects('old', { runs: ['r1'], resumed: ['w1'] })
    expect((await s.listEvents({ limit: 5 })).events).toEqual([
      { id: 'old', name: 'order.paid', data: { n: 1 }, time, runs: ['r1'], resumed: ['w1'] },
    ])
  })
})

describe('the runs waiting for an event', () => {
  it('are found through runs_by_event_wait, the expression listRuns writes', async () => {
    const schema = freshSchema()
    const s = store(schema)
    const waiting = {
      id: 'w',
      taskName: 't',
      status: 'suspended' as const,
      trigger: 'manual' as const,
      input: null,
      ok: true,
      attempts: [],
      steps: {},
      createdAt: new Date().toISOString(),
      suspended: {
        stepKey: 'paid',
        waitpoint: { type: 'event' as const, name: 'order.paid', since: new Date().toISOString(), tokenId: 'tk' },
      },
    }
    await s.createRun(waiting)
    expect((await s.listRuns({ waitingForEvent: 'order.paid' })).map((run) => run.id)).toEqual(['w'])
    expect(await s.listRuns({ waitingForEvent: 'order.shipped' })).toEqual([])
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    try {
      // With sequential scans priced out, the plan says whether the index can serve the expression at all.
      await sql`SET enable_seqscan = off`
      const plan = await sql.unsafe(
        `EXPLAIN SELECT id FROM ${schema}.runs WHERE status = 'suspended' AND ${EVENT_WAIT_NAME} = 'order.paid' ORDER BY seq DESC`,
      )
      expect(plan.map((row) => Object.values(row)[0]).join('\n')).toContain('runs_by_event_wait')
    } finally {
      await sql.end()
    }
  })
})
