import { describe, expect, it } from 'vitest'
import { MemoryCacheStore, type CacheEntry, type CacheStore } from '../../src/index.ts'

const entry = (body: string, tags: string[] = []): CacheEntry => ({
  body,
  status: 200,
  headers: [['content-type', 'text/html; charset=utf-8']],
  createdAt: Date.now(),
  revalidate: 60,
  tags,
})

/** The contract every CacheStore meets; run it against each implementation. */
function cacheStoreContract(name: string, make: () => CacheStore): void {
  describe(`${name} (CacheStore contract)`, () => {
    it('returns what was set, and undefined for an unknown key', async () => {
      const store = make()
      await store.set('/a', entry('a'))
      expect((await store.get('/a'))?.body).toBe('a')
      expect(await store.get('/missing')).toBeUndefined()
    })

    it('replaces an entry set twice', async () => {
      const store = make()
      await store.set('/a', entry('one'))
      await store.set('/a', entry('two'))
      expect((await store.get('/a'))?.body).toBe('two')
      expect([...(await store.keys())]).toEqual(['/a'])
    })

    it('deletes, telling whether something was removed', async () => {
      const store = make()
      await store.set('/a', entry('a'))
      expect(await store.delete('/a')).toBe(true)
      expect(await store.delete('/a')).toBe(false)
      expect(await store.get('/a')).toBeUndefined()
    })

    it('lists every key, query strings included', async () => {
      const store = make()
      await store.set('/a', entry('a'))
      await store.set('/a?page=2', entry('a2'))
      await store.set('/b', entry('b'))
      expect([...(await store.keys())].sort()).toEqual(['/a', '/a?page=2', '/b'])
    })

    it('keeps bodies as bytes as well as strings', async () => {
      const store = make()
      await store.set('/bin', { ...entry(''), body: new Uint8Array([1, 2, 3]) })
      expect([...((await store.get('/bin'))!.body as Uint8Array)]).toEqual([1, 2, 3])
    })
  })
}

cacheStoreContract('MemoryCacheStore', () => new MemoryCacheStore())

describe('MemoryCacheStore bound', () => {
  it('evicts the least recently used entry past maxEntries', () => {
    const store = new MemoryCacheStore({ maxEntries: 2 })
    store.set('/a', entry('a'))
    store.set('/b', entry('b'))
    store.get('/a')
    store.set('/c', entry('c'))
    expect(store.keys().sort()).toEqual(['/a', '/c'])
    expect(store.size).toBe(2)
  })

  it('rejects a bound that is not a positive integer', () => {
    expect(() => new MemoryCacheStore({ maxEntries: 0 })).toThrow(
      new RangeError('MemoryCacheStore: maxEntries must be a positive integer (got 0)'),
    )
  })
})
