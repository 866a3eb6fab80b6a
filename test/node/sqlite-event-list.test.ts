// Listing events on SqliteRunStore beyond the contract: stores on one file standing for
// processes that note what one event did at once, a cursor whose event was pruned, and
// the index a file written by schema version 6 gains.
import { describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { listRunsQuery } from '../../src/runtime/tasks/sql/queries.ts'
import { asVersion, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw } = sqliteFiles('svc-sqlite-event-list-')

const at = (ms: number) => new Date(ms).toISOString()

describe('SqliteRunStore event listing', () => {
  it('of stores on one file noting what one event did at once, every id lands once', async () => {
    const path = dbFile()
    const [a, b] = [store(path), store(path)]
    await a.putEvent({ id: 'paid', name: 'order.paid', time: at(Date.now()) })
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).noteEventEffects('paid', { runs: [`r${i}`], resumed: [`w${i % 2}`] })),
    )
    for (const s of [a, b]) {
      const [event] = (await s.listEvents({ limit: 1 })).events
      expect([...event.runs!].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`).sort())
      expect([...event.resumed!].sort()).toEqual(['w0', 'w1'])
    }
  })

  it('a cursor pages on after the event it names is removed', async () => {
    const path = dbFile()
    const s = store(path)
    for (const id of ['a', 'b', 'c', 'd']) await s.putEvent({ id, name: 'n', time: at(Date.now()) })
    const first = await s.listEvents({ limit: 2 })
    expect(first.events.map((event) => event.id)).toEqual(['d', 'c'])
    raw(path).prepare("DELETE FROM svc_events WHERE id = 'c'").run()
    expect((await s.listEvents({ limit: 2, cursor: first.cursor })).events.map((event) => event.id)).toEqual(['b', 'a'])
  })

  it('a file written by schema version 6 gains the index of the events of one name, its events kept', async () => {
    const path = dbFile()
    const first = store(path)
    await first.putEvent({ id: 'old', name: 'order.paid', data: 1, time: at(Date.now()) })
    await first.close()
    asVersion(path, 6)
    const index = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'svc_events_by_name_seq'"
    expect(raw(path).prepare(index).all()).toEqual([])
    const second = store(path)
    expect(raw(path).prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION })
    expect(raw(path).prepare(index).all()).toHaveLength(1)
    await second.noteEventEffects('old', { runs: ['r1'] })
    expect((await second.listEvents({ limit: 5, name: 'order.paid' })).events).toEqual([
      { id: 'old', name: 'order.paid', data: 1, time: expect.any(String), runs: ['r1'] },
    ])
  })
})

describe('the runs waiting for an event', () => {
  it('are found through svc_runs_by_event_wait, not by reading every suspended run', async () => {
    const path = dbFile()
    await store(path).listRuns()
    const query = listRunsQuery({ status: 'suspended', waitingForEvent: 'order.paid', limit: 500, cursor: 'run-1' })!
    const plan = raw(path)
      .prepare(`EXPLAIN QUERY PLAN ${query.text}`)
      .all(...query.params)
      .map((row) => String(row.detail))
    expect(plan).toContain('SEARCH svc_runs USING INDEX svc_runs_by_event_wait (<expr>=?)')
    // No step of it reads the table whole.
    expect(plan.filter((step) => step.startsWith('SCAN'))).toEqual([])
  })
})
