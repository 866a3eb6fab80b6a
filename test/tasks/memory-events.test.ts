// The event contract on MemoryRunStore, and its bound on how many events it holds.
import { describe, expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import { eventStoreContract } from './event-store-contract.ts'

eventStoreContract('MemoryRunStore', () => new MemoryRunStore())

describe('MemoryRunStore events', () => {
  it('holds at most maxEvents, letting the oldest go first', async () => {
    const store = new MemoryRunStore({ maxEvents: 3 })
    const time = new Date().toISOString()
    for (let i = 0; i < 5; i++) await store.putEvent({ id: `e${i}`, name: 'n', time })
    expect((await store.eventsSince('n', time, 10)).map((event) => event.id)).toEqual(['e2', 'e3', 'e4'])
    expect(() => new MemoryRunStore({ maxEvents: 0 })).toThrow(/maxEvents must be a positive integer \(got 0\)/)
  })
})
