/**
 * The event half of the `RunStore` contract (`putEvent`, `eventsSince`;
 * docs/events.md): an event is recorded once per id, whoever races to
 * record it, read back by name from a time on, oldest first, and held for
 * `EVENT_RETENTION_MS`. Every store that holds events runs it:
 *
 * ```ts
 * eventStoreContract('SomeStore', () => new SomeStore())
 * ```
 */
import { describe, expect, it } from 'vitest'
import { EVENT_RETENTION_MS, type EventRecord, type RunStore } from '../../src/runtime/tasks/store.ts'

type EventStore = RunStore & Required<Pick<RunStore, 'putEvent' | 'eventsSince'>>

const at = (ms: number) => new Date(ms).toISOString()
const EPOCH = at(0)

export function eventStoreContract(name: string, createStore: () => RunStore | Promise<RunStore>): void {
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
  })
}
