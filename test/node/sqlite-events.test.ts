// Events on SqliteRunStore: the event contract on a file and in memory,
// stores on one file standing for processes that send one event at once,
// and the events table a file written before it gains.
import type { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import type { RunStore } from '../../src/runtime/tasks/store/store.ts'
import { SCHEMA_VERSION } from '../../src/sqlite/database.ts'
import { EVENT_PRUNE_BATCH, EVENT_RETENTION_MS, type EventRecord } from '../../src/runtime/tasks/store/store.ts'
import { eventStoreContract } from '../tasks/event-store-contract.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { asVersion, sqliteFiles } from './_sqlite-files.ts'

const { dbFile, store, raw, storeAndConnection } = sqliteFiles('svc-sqlite-events-')

// Each store's own connection, to record tens of thousands of events in one transaction.
const connections = new WeakMap<RunStore, DatabaseSync>()
const withConnection = (path: string) => {
  const { store, db } = storeAndConnection(path)
  connections.set(store, db)
  return store
}
const putEvents = async (s: RunStore, events: EventRecord[]) => {
  const db = connections.get(s)!
  const insert = db.prepare('INSERT INTO svc_events (id, name, time, record) VALUES (?, ?, ?, ?)')
  db.exec('BEGIN')
  for (const event of events) insert.run(event.id, event.name, event.time, JSON.stringify(event))
  db.exec('COMMIT')
}
eventStoreContract('SqliteRunStore (:memory:)', () => withConnection(':memory:'), { putEvents })
eventStoreContract('SqliteRunStore (file)', () => withConnection(dbFile()), { putEvents })

const at = (ms: number) => new Date(ms).toISOString()

describe('SqliteRunStore events', () => {
  it('of two stores on one file sending one id at once, exactly one records it, and both answer with its event', async () => {
    const path = dbFile()
    const [a, b] = [store(path), store(path)]
    const time = at(Date.now())
    const sends = Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).putEvent({ id: 'once', name: 'order.paid', data: { i }, time }))
    const results = await Promise.all(sends)
    expect(results.filter((result) => result.created)).toHaveLength(1)
    const winner = results.find((result) => result.created)!.event
    for (const result of results) expect(result.event).toEqual(winner)
    expect(await a.eventsSince('order.paid', at(0), 10)).toEqual([winner])
    expect(await b.eventsSince('order.paid', at(0), 10)).toEqual([winner])
  })

  it('keeps events across a restart of the process', async () => {
    const path = dbFile()
    const event: EventRecord = { id: 'kept', name: 'order.paid', data: [1, 'two'], time: at(Date.now()) }
    const first = store(path)
    await first.putEvent(event)
    await first.close()
    const second = store(path)
    expect(await second.eventsSince('order.paid', at(0), 10)).toEqual([event])
    expect(await second.putEvent({ ...event, data: 'again' })).toEqual({ event, created: false })
  })

  it('compares times as instants, whatever offset they were written with', async () => {
    const s = store(':memory:')
    const now = Date.now()
    // The same instant as `now`, written two hours east of UTC.
    const east = new Date(now + 2 * 3600_000).toISOString().replace('Z', '+02:00')
    await s.putEvent({ id: 'east', name: 'n', time: east })
    expect((await s.eventsSince('n', at(now), 10)).map((event) => event.id)).toEqual(['east'])
    expect(await s.eventsSince('n', at(now + 1), 10)).toEqual([])
    expect(await s.eventsSince('n', new Date(now + 1).toISOString().replace('Z', '+00:00'), 10)).toEqual([])
    expect(await s.eventsSince('n', at(0), 0)).toEqual([])
  })

  it('removes at most a batch of expired events per send, the oldest first', async () => {
    const path = dbFile()
    const s = store(path)
    const old = Date.now() - EVENT_RETENTION_MS - 60_000
    const db = raw(path)
    const insert = db.prepare('INSERT INTO svc_events (id, name, time, record) VALUES (?, ?, ?, ?)')
    for (let i = 0; i < EVENT_PRUNE_BATCH + 5; i++) {
      const event = { id: `old${i}`, name: 'tick', time: at(old + i) }
      insert.run(event.id, event.name, event.time, JSON.stringify(event))
    }
    await s.putEvent({ id: 'new', name: 'tick', time: at(Date.now()) })
    const left = db.prepare('SELECT id FROM svc_events ORDER BY seq').all() as { id: string }[]
    expect(left.map((row) => row.id)).toEqual([...Array.from({ length: 5 }, (_, i) => `old${EVENT_PRUNE_BATCH + i}`), 'new'])
  })

  it('a file written by schema version 5 gains the events table, its runs kept', async () => {
    const path = dbFile()
    const first = store(path)
    const run = await first.createRun(makeRun({ status: 'suspended' }))
    await first.close()
    asVersion(path, 5)
    expect(raw(path).prepare("SELECT 1 FROM sqlite_master WHERE name = 'events'").all()).toEqual([])
    const second = store(path)
    expect(raw(path).prepare('PRAGMA user_version').get()).toEqual({ user_version: SCHEMA_VERSION })
    expect(await second.getRun(run.id)).toMatchObject({ status: 'suspended' })
    const event = { id: 'first', name: 'order.paid', time: at(Date.now()) }
    expect(await second.putEvent(event)).toEqual({ event, created: true })
  })
})
