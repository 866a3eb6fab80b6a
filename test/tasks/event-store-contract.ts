/**
 * The event half of the `RunStore` contract (`putEvent`, `eventsSince`,
 * `listEvents`, `noteEventEffects`; docs/events.md): an event is recorded
 * once per id, whoever races to record it, read back by name from a time
 * on, oldest first, listed newest first a page at a time, carries what it
 * did as noted, and is held for `EVENT_RETENTION_MS`. Every store that
 * holds events runs it:
 *
 * ```ts
 * eventStoreContract('SomeStore', () => new SomeStore())
 * ```
 */
import { describe, expect, it } from 'vitest'
import { EVENT_RETENTION_MS, type EventRecord, type RunStore } from '../../src/runtime/tasks/store/store.ts'

type EventStore = RunStore & Required<Pick<RunStore, 'putEvent' | 'eventsSince' | 'listEvents' | 'noteEventEffects'>>

const at = (ms: number) => new Date(ms).toISOString()
const EPOCH = at(0)
/** Events of a name sent after those a wait looks for, none of them meeting it. */
const FLOOD = 50_000

export interface EventContractOptions {
  /**
   * Records many events at once, as `putEvent` records each, for the tests
   * that need tens of thousands: a store whose `putEvent` is a write of
   * its own may insert them into its table in one go. By default each goes
   * through `putEvent`.
   */
  putEvents?(store: RunStore, events: EventRecord[]): Promise<void>
}

export function eventStoreContract(
  name: string,
  createStore: () => RunStore | Promise<RunStore>,
  { putEvents = putOneByOne }: EventContractOptions = {},
): void {
  const open = async () => (await createStore()) as EventStore

  describe(`event store contract: ${name}`, () => {
    it('records an event once per id: the id again resolves to the first send, recording nothing', async () => {
      const store = await open()
      const time = at(Date.now())
      const first: EventRecord = { id: 'e1', name: 'order.paid', data: { orderId: 'a', nested: [1, { deep: true }] }, time }
      expect(await store.putEvent(first)).toEqual({ event: first, created: true })
      const again = await store.putEvent({ id: 'e1', name: 'order.paid', data: { orderId: 'b' }, time: at(Date.now() + 5) })
      expect(again).toEqual({ event: first, created: false })
      expect(await store.eventsSince('order.paid', EPOCH, 10)).toEqual([first])
    })

    it('of many puts of one id at once, exactly one records it', async () => {
      const store = await open()
      const time = at(Date.now())
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.putEvent({ id: 'race', name: 'x', data: i, time })))
      expect(results.filter((result) => result.created)).toHaveLength(1)
      const winner = results.find((result) => result.created)!.event
      for (const result of results) expect(result.event).toEqual(winner)
    })

    it('reads the events of one name sent at a time or later, oldest first, at most limit', async () => {
      const store = await open()
      const now = Date.now()
      for (let i = 0; i < 5; i++) await store.putEvent({ id: `p${i}`, name: 'order.paid', data: { i }, time: at(now + i) })
      await store.putEvent({ id: 'r0', name: 'order.refunded', time: at(now + 2) })
      expect((await store.eventsSince('order.paid', EPOCH, 10)).map((event) => event.id)).toEqual(['p0', 'p1', 'p2', 'p3', 'p4'])
      expect((await store.eventsSince('order.paid', at(now + 2), 10)).map((event) => event.id)).toEqual(['p2', 'p3', 'p4'])
      expect((await store.eventsSince('order.paid', EPOCH, 2)).map((event) => event.id)).toEqual(['p0', 'p1'])
      expect(await store.eventsSince('order.refunded', at(now + 3), 10)).toEqual([])
      expect(await store.eventsSince('nothing', EPOCH, 10)).toEqual([])
    })

    it('reads only the events whose data holds match, comparing as JSON does, paths into arrays included', async () => {
      const store = await open()
      const now = Date.now()
      const sent: [string, unknown][] = [
        ['s', { n: '5' }],
        ['n', { n: 5 }],
        ['t', { n: true, customer: { id: 7, tags: ['a', 'b'] } }],
        ['z', { n: null, items: [{ sku: 'x-1' }] }],
        ['d', undefined],
      ]
      for (const [i, [id, data]] of sent.entries()) {
        await store.putEvent({ id, name: 'm', time: at(now + i), ...(data === undefined ? {} : { data }) })
      }
      const ids = async (match: Record<string, unknown>) => (await store.eventsSince('m', EPOCH, 10, match)).map((event) => event.id)
      expect(await ids({ n: 5 })).toEqual(['n'])
      expect(await ids({ n: '5' })).toEqual(['s'])
      expect(await ids({ n: true })).toEqual(['t'])
      expect(await ids({ n: 1 })).toEqual([])
      expect(await ids({ n: null })).toEqual(['z'])
      expect(await ids({ 'customer.id': 7, 'customer.tags': ['a', 'b'] })).toEqual(['t'])
      expect(await ids({ 'customer.tags': ['b', 'a'] })).toEqual([])
      expect(await ids({ customer: { tags: ['a', 'b'], id: 7 } })).toEqual(['t'])
      expect(await ids({ 'customer.tags.1': 'b' })).toEqual(['t'])
      expect(await ids({ 'items.0.sku': 'x-1' })).toEqual(['z'])
      expect(await ids({ missing: 1 })).toEqual([])
    })

    it('finds the first, a middle and the last of 5,000 events of a name by match, and one sent after a flood of others', async () => {
      const store = await open()
      const now = Date.now()
      const send = (from: number, count: number, data: (i: number) => unknown) =>
        putEvents(
          store,
          Array.from({ length: count }, (_, i) => ({ id: `e${from + i}`, name: 'order.paid', data: data(from + i), time: at(now) })),
        )
      await send(0, 5000, (i) => ({ orderId: `o-${i}` }))
      for (const i of [0, 2500, 4999]) {
        const [found] = await store.eventsSince('order.paid', EPOCH, 1, { orderId: `o-${i}` })
        expect(found?.id, `o-${i}`).toBe(`e${i}`)
      }
      // Data a query cannot narrow by (an object) is checked event by event, still to the end.
      await send(5000, FLOOD, () => ({ orderId: { not: 'this' } }))
      await store.putEvent({ id: 'late', name: 'order.paid', data: { orderId: { id: 'late' } }, time: at(now) })
      expect((await store.eventsSince('order.paid', EPOCH, 1, { orderId: { id: 'late' } })).map((event) => event.id)).toEqual(['late'])
    }, 120_000)

    it('keeps an event without data without a data field, and hands out copies', async () => {
      const store = await open()
      const { event } = await store.putEvent({ id: 'bare', name: 'ping', time: at(Date.now()) })
      expect('data' in event).toBe(false)
      const withData = await store.putEvent({ id: 'full', name: 'ping', data: { list: [1] }, time: at(Date.now()) })
      ;(withData.event.data as { list: number[] }).list.push(2)
      const [, read] = await store.eventsSince('ping', EPOCH, 10)
      expect(read.data).toEqual({ list: [1] })
      ;(read.data as { list: number[] }).list.push(3)
      expect((await store.eventsSince('ping', EPOCH, 10))[1].data).toEqual({ list: [1] })
    })

    it('lets go of events older than the retention as new ones come: their id is free again', async () => {
      const store = await open()
      const old = at(Date.now() - EVENT_RETENTION_MS - 60_000)
      await store.putEvent({ id: 'old', name: 'tick', time: old })
      await store.putEvent({ id: 'new', name: 'tick', time: at(Date.now()) })
      expect((await store.eventsSince('tick', EPOCH, 10)).map((event) => event.id)).toEqual(['new'])
      expect((await store.putEvent({ id: 'old', name: 'tick', time: at(Date.now()) })).created).toBe(true)
    })

    it('lists events newest first, in the order they were recorded rather than by their time', async () => {
      const store = await open()
      const now = Date.now()
      await store.putEvent({ id: 'first', name: 'a', data: { n: 1 }, time: at(now + 50) })
      await store.putEvent({ id: 'second', name: 'b', time: at(now) })
      await store.putEvent({ id: 'third', name: 'a', time: at(now + 10) })
      const { events, cursor } = await store.listEvents({ limit: 10 })
      expect(events.map((event) => event.id)).toEqual(['third', 'second', 'first'])
      expect(events[2]).toEqual({ id: 'first', name: 'a', data: { n: 1 }, time: at(now + 50) })
      expect('data' in events[1]).toBe(false)
      expect(cursor).toBeUndefined()
      expect(await store.listEvents({ limit: 10, name: 'none' })).toEqual({ events: [] })
    })

    it('lists only the events of a name when asked', async () => {
      const store = await open()
      const time = at(Date.now())
      for (let i = 0; i < 6; i++) await store.putEvent({ id: `e${i}`, name: i % 2 ? 'odd' : 'even', time })
      expect((await store.listEvents({ limit: 10, name: 'odd' })).events.map((event) => event.id)).toEqual(['e5', 'e3', 'e1'])
      expect((await store.listEvents({ limit: 10, name: 'even' })).events.map((event) => event.id)).toEqual(['e4', 'e2', 'e0'])
    })

    it('pages with a cursor through more than one page, each event once, the last page without a cursor', async () => {
      const store = await open()
      const time = at(Date.now())
      for (let i = 0; i < 8; i++) await store.putEvent({ id: `e${i}`, name: i < 7 ? 'many' : 'other', time })
      const pages: string[][] = []
      let cursor: string | undefined
      do {
        const page = await store.listEvents({ limit: 3, name: 'many', ...(cursor === undefined ? {} : { cursor }) })
        pages.push(page.events.map((event) => event.id))
        cursor = page.cursor
        expect(typeof (cursor ?? '')).toBe('string')
      } while (cursor !== undefined)
      expect(pages).toEqual([['e6', 'e5', 'e4'], ['e3', 'e2', 'e1'], ['e0']])
      const all: string[] = []
      cursor = undefined
      do {
        const page = await store.listEvents({ limit: 2, ...(cursor === undefined ? {} : { cursor }) })
        all.push(...page.events.map((event) => event.id))
        cursor = page.cursor
      } while (cursor !== undefined)
      expect(all).toEqual(['e7', 'e6', 'e5', 'e4', 'e3', 'e2', 'e1', 'e0'])
    })

    it('a page is at most limit: a limit of exactly what is held has no cursor; a bad limit or cursor throws', async () => {
      const store = await open()
      const time = at(Date.now())
      for (let i = 0; i < 3; i++) await store.putEvent({ id: `e${i}`, name: 'n', time })
      expect(await store.listEvents({ limit: 3 })).toEqual({ events: expect.any(Array) })
      const one = await store.listEvents({ limit: 1 })
      expect(one.events.map((event) => event.id)).toEqual(['e2'])
      expect(one.cursor).toEqual(expect.any(String))
      for (const limit of [0, -1, 1.5, Number.NaN])
        await expect(store.listEvents({ limit })).rejects.toThrow(/limit must be a whole number/)
      await expect(store.listEvents({ limit: 1, cursor: 'not a cursor' })).rejects.toThrow(/cursor must be the cursor of a page/)
    })

    it('notes what an event did, merged without duplicates, in order, on every read of it', async () => {
      const store = await open()
      const time = at(Date.now())
      const event: EventRecord = { id: 'paid', name: 'order.paid', data: { orderId: 'o' }, time }
      await store.putEvent(event)
      await store.noteEventEffects('paid', { runs: ['r1', 'r2'], resumed: [] })
      await store.noteEventEffects('paid', { runs: ['r2', 'r3', 'r3'], resumed: ['w1'] })
      await store.noteEventEffects('paid', { resumed: ['w1', 'w2'] })
      await store.noteEventEffects('paid', { runs: ['r1'] })
      const noted = { ...event, runs: ['r1', 'r2', 'r3'], resumed: ['w1', 'w2'] }
      expect((await store.listEvents({ limit: 10 })).events).toEqual([noted])
      expect(await store.eventsSince('order.paid', EPOCH, 10)).toEqual([noted])
      // A send of the id again: the event held, with what it did.
      expect(await store.putEvent({ ...event, data: 'again' })).toEqual({ event: noted, created: false })
      // An event nothing was noted on carries neither field.
      await store.putEvent({ id: 'quiet', name: 'order.paid', time })
      const [quiet] = (await store.listEvents({ limit: 1 })).events
      expect(quiet).toEqual({ id: 'quiet', name: 'order.paid', time })
      // An event the store does not hold is left alone.
      await store.noteEventEffects('unknown', { runs: ['r9'] })
      expect((await store.listEvents({ limit: 10 })).events.map((e) => e.id)).toEqual(['quiet', 'paid'])
    })

    it('of many notes on one event at once, every id lands once', async () => {
      const store = await open()
      await store.putEvent({ id: 'busy', name: 'n', time: at(Date.now()) })
      await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.noteEventEffects('busy', { runs: [`r${i}`, 'r0'], resumed: [`w${i % 3}`] })),
      )
      const [event] = (await store.listEvents({ limit: 1 })).events
      expect([...event.runs!].sort()).toEqual(Array.from({ length: 12 }, (_, i) => `r${i}`).sort())
      expect([...event.resumed!].sort()).toEqual(['w0', 'w1', 'w2'])
    })

    it('lists no pruned event, and notes nothing on one', async () => {
      const store = await open()
      // Recorded with a time already past the retention: held until the next send prunes it.
      await store.putEvent({ id: 'stale', name: 'tick', time: at(Date.now() - EVENT_RETENTION_MS - 60_000) })
      expect((await store.listEvents({ limit: 10 })).events.map((event) => event.id)).toEqual(['stale'])
      await store.putEvent({ id: 'fresh', name: 'tick', time: at(Date.now()) })
      await store.noteEventEffects('stale', { runs: ['r1'] })
      expect(await store.listEvents({ limit: 10 })).toEqual({ events: [expect.objectContaining({ id: 'fresh' })] })
      expect((await store.listEvents({ limit: 10, name: 'tick' })).events.map((event) => event.id)).toEqual(['fresh'])
      // Sent again, its id is a new event, listed first, with nothing noted.
      await store.putEvent({ id: 'stale', name: 'tick', time: at(Date.now()) })
      expect((await store.listEvents({ limit: 10 })).events).toEqual([
        { id: 'stale', name: 'tick', time: expect.any(String) },
        expect.objectContaining({ id: 'fresh' }),
      ])
    })
  })
}

/** `putEvent` for each, 500 at a time. */
async function putOneByOne(store: RunStore, events: EventRecord[]): Promise<void> {
  for (let i = 0; i < events.length; i += 500) await Promise.all(events.slice(i, i + 500).map((event) => store.putEvent!(event)))
}
