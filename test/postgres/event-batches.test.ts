// Event calls made at once on PostgresRunStore go together (event-writes.ts,
// event-wait-reads.ts): each answers as it would alone, one that Postgres
// cannot store fails alone, and pages of waiting runs read together are the
// pages read one by one.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { EVENT_RETENTION_MS } from '../../src/runtime/tasks/store/store.ts'
import type { RunRecord } from '../../src/types.ts'
import { makeRun } from '../tasks/store-contract.ts'
import { createDatabase } from './_pg.ts'

let url: string
beforeAll(async () => {
  url = await createDatabase('event_batches')
})

let schemas = 0
const open: PostgresRunStore[] = []
async function store(schema = `s${++schemas}`): Promise<PostgresRunStore> {
  const s = new PostgresRunStore({ url, schema })
  open.push(s)
  await s.ready()
  return s
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

const at = (ms: number) => new Date(ms).toISOString()

describe('PostgresRunStore events sent at once', () => {
  it('puts made at once each answer as alone: new, held, taken over when expired, the same id twice, and one refused alone', async () => {
    const s = await store()
    const now = Date.now()
    const held = { id: 'held', name: 'order.paid', data: { first: true }, time: at(now) }
    await s.putEvent(held)
    await s.putEvent({ id: 'stale', name: 'tick', time: at(now - EVENT_RETENTION_MS - 60_000) })
    const fresh = Array.from({ length: 40 }, (_, i) => ({
      id: `e${i}`,
      name: 'order.paid',
      time: at(now + i),
      ...(i % 3 === 0 ? {} : { data: i % 3 === 1 ? null : { i } }),
    }))
    const results = await Promise.allSettled([
      ...fresh.map((event) => s.putEvent(event)),
      s.putEvent({ ...held, data: 'again' }),
      s.putEvent({ id: 'stale', name: 'tick', data: 'new', time: at(now) }),
      s.putEvent({ id: 'twice', name: 'x', data: 1, time: at(now) }),
      s.putEvent({ id: 'twice', name: 'x', data: 2, time: at(now) }),
      s.putEvent({ id: 'nul', name: 'x', data: 'a\u0000b', time: at(now) }),
    ])
    const answers = results.map((result) => (result.status === 'fulfilled' ? result.value : result.reason))
    for (const [i, event] of fresh.entries()) expect(answers[i]).toEqual({ event, created: true })
    expect(answers[40]).toEqual({ event: held, created: false })
    expect(answers[41]).toEqual({ event: { id: 'stale', name: 'tick', data: 'new', time: at(now) }, created: true })
    expect(answers[42]).toEqual({ event: { id: 'twice', name: 'x', data: 1, time: at(now) }, created: true })
    expect(answers[43]).toEqual({ event: { id: 'twice', name: 'x', data: 1, time: at(now) }, created: false })
    expect(answers[44]).toBeInstanceOf(Error)
    expect((answers[44] as Error).message).toMatch(/NUL character/)
    const { events } = await s.listEvents({ limit: 100 })
    expect(events.map((event) => event.id).sort()).toEqual([...fresh.map((event) => event.id), 'held', 'stale', 'twice'].sort())
  })

  it('of stores on one schema putting the same ids at once in opposite orders, each id is recorded once', async () => {
    const first = await store()
    const second = await store(first.schema)
    const time = at(Date.now())
    const ids = Array.from({ length: 30 }, (_, i) => `same${i}`)
    // Several connections per store open first, so the puts below run side by side.
    await Promise.all([first, second].flatMap((s) => Array.from({ length: 6 }, () => s.listEvents({ limit: 1 }))))
    const [a, b] = await Promise.all([
      Promise.all(ids.map((id) => first.putEvent({ id, name: 'same', data: 'first', time }))),
      Promise.all([...ids].reverse().map((id) => second.putEvent({ id, name: 'same', data: 'second', time }))),
    ])
    const byId = new Map(b.map((answer) => [answer.event.id, answer]))
    for (const answer of a) {
      const other = byId.get(answer.event.id)!
      expect(answer.created).not.toBe(other.created)
      expect(answer.event).toEqual(other.event)
    }
    expect((await first.listEvents({ name: 'same', limit: 100 })).events).toHaveLength(30)
  })

  it('a bad time is refused before the batch, and the others go on', async () => {
    const s = await store()
    const [bad, good] = await Promise.allSettled([
      s.putEvent({ id: 'bad', name: 'x', time: 'not a time' }),
      s.putEvent({ id: 'good', name: 'x', time: at(Date.now()) }),
    ])
    expect(bad.status === 'rejected' && bad.reason).toBeInstanceOf(TypeError)
    expect(good.status === 'fulfilled' && good.value.created).toBe(true)
  })

  it('notes made at once on many events, and several on one, each land once and in order', async () => {
    const s = await store()
    const time = at(Date.now())
    for (let i = 0; i < 20; i++) await s.putEvent({ id: `n${i}`, name: 'n', time })
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => s.noteEventEffects(`n${i}`, { runs: [`r${i}`, `r${i}`, 'r-all'], resumed: [] })),
      ...Array.from({ length: 20 }, (_, i) => s.noteEventEffects(`n${i}`, { resumed: [`w${i}`] })),
      s.noteEventEffects('n0', { runs: ['r-all', 'r-last'] }),
      s.noteEventEffects('unknown', { runs: ['r9'] }),
    ])
    const { events } = await s.listEvents({ name: 'n', limit: 20 })
    for (const event of events) {
      const i = Number(event.id.slice(1))
      expect(event.runs).toEqual(i === 0 ? ['r0', 'r-all', 'r-last'] : [`r${i}`, 'r-all'])
      expect(event.resumed).toEqual([`w${i}`])
    }
    expect(await s.listEvents({ limit: 100 })).toMatchObject({ events: { length: 20 } })
  })

  it('pages of runs waiting on events, read at once, are the pages read one by one', async () => {
    const s = await store()
    const onEvent = (name: string) =>
      makeRun({
        status: 'suspended',
        suspended: { stepKey: 'e', waitpoint: { type: 'event', name, since: '2025-01-01T00:00:00.000Z', tokenId: crypto.randomUUID() } },
      })
    const names = ['a', 'b', 'c']
    for (let i = 0; i < 30; i++) await s.createRun(onEvent(names[i % 3]))
    await s.createRun(makeRun({ status: 'running' }))
    const suspended = await s.listRuns({ status: 'suspended' })
    const waiting = (name: string) =>
      suspended.filter((run) => run.suspended?.waitpoint.type === 'event' && run.suspended.waitpoint.name === name)
    const ids = (runs: RunRecord[]) => runs.map((run) => run.id)
    const cursorOf = (name: string) => waiting(name)[3].id
    const [a, b, c, bAfter, cAfter, none, unheld, running] = await Promise.all([
      s.listRuns({ status: 'suspended', waitingForEvent: 'a', limit: 4 }),
      s.listRuns({ waitingForEvent: 'b' }),
      s.listRuns({ status: ['suspended', 'running'], waitingForEvent: 'c', limit: 2.5 }),
      s.listRuns({ status: 'suspended', waitingForEvent: 'b', limit: 4, cursor: cursorOf('b') }),
      s.listRuns({ waitingForEvent: 'c', cursor: cursorOf('c') }),
      s.listRuns({ status: 'suspended', waitingForEvent: 'd', limit: 500 }),
      s.listRuns({ waitingForEvent: 'a', cursor: 'no-such-run' }),
      s.listRuns({ status: 'running', waitingForEvent: 'a' }),
    ])
    expect(ids(a)).toEqual(ids(waiting('a').slice(0, 4)))
    expect(ids(b)).toEqual(ids(waiting('b')))
    expect(ids(c)).toEqual(ids(waiting('c').slice(0, 3)))
    expect(ids(bAfter)).toEqual(ids(waiting('b').slice(4, 8)))
    expect(ids(cAfter)).toEqual(ids(waiting('c').slice(4)))
    expect(a[0]).toEqual(waiting('a')[0])
    expect([none, unheld, running]).toEqual([[], [], []])
  })
})
