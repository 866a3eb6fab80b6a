import { describe, expect, it } from 'vitest'
import { newRunId, runIdShard, tokenIdFor } from '../../src/runtime/tasks/base/ids.ts'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The Unix time in milliseconds a version 7 UUID starts with. */
const timeOf = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)

describe('run ids', () => {
  it('are version 7 UUIDs (RFC 9562)', () => {
    // More than one draw of random bytes, so a refill is crossed.
    for (let i = 0; i < 1000; i++) expect(newRunId()).toMatch(UUID_V7)
  })

  it('start with their creation time in milliseconds, big-endian', () => {
    expect(newRunId(0x0123456789ab).slice(0, 15)).toBe('01234567-89ab-7')
    expect(timeOf(newRunId(0))).toBe(0)
    // The largest 48-bit time, and one past 2^32 ms, where the high and low words meet.
    expect(timeOf(newRunId(2 ** 48 - 1))).toBe(2 ** 48 - 1)
    expect(timeOf(newRunId(2 ** 32))).toBe(2 ** 32)
    const before = Date.now()
    const id = newRunId()
    expect(timeOf(id)).toBeGreaterThanOrEqual(before)
    expect(timeOf(id)).toBeLessThanOrEqual(Date.now())
  })

  it('made for a shard, are version 8 UUIDs naming it, still in time order; other ids name none', () => {
    for (const shard of [0, 1, 63, 4095]) {
      const id = newRunId(1_700_000_000_000, shard)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(runIdShard(id)).toBe(shard)
      expect(runIdShard(tokenIdFor(id, 'approve'))).toBe(shard)
      expect(timeOf(id)).toBe(1_700_000_000_000)
    }
    expect([newRunId(1, 3), newRunId(2, 0), newRunId(3, 3)].map(timeOf)).toEqual([1, 2, 3])
    expect(runIdShard(newRunId())).toBeUndefined()
    expect(runIdShard('run-1')).toBeUndefined()
    expect(runIdShard('')).toBeUndefined()
  })

  it('sort in creation order across milliseconds, so stores append to their id index', () => {
    const ids = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_065_536, 1_800_000_000_000].map((ms) => newRunId(ms))
    expect([...ids].sort()).toEqual(ids)
  })

  it('do not repeat within a millisecond, and use every hex digit in every random position', () => {
    const ids = Array.from({ length: 2000 }, () => newRunId(1_700_000_000_000))
    expect(new Set(ids).size).toBe(ids.length)
    // A digit lost in formatting would leave one position constant; with
    // 2,000 ids each random position takes all sixteen values.
    for (let position = 15; position < 36; position++) {
      if ([18, 19, 23].includes(position)) continue
      expect(new Set(ids.map((id) => id[position])).size).toBe(16)
    }
  })
})
