import { describe, expect, it } from 'vitest'
import { newRunId } from '../../src/runtime/tasks/ids.ts'

describe('run ids', () => {
  it('are version 4 UUIDs, in the form crypto.randomUUID() gives', () => {
    // More than one draw of random bytes, so a refill is crossed.
    for (let i = 0; i < 1000; i++) {
      expect(newRunId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    }
  })

  it('do not repeat, and use every hex digit in every free position', () => {
    const ids = Array.from({ length: 2000 }, () => newRunId())
    expect(new Set(ids).size).toBe(ids.length)
    // A digit lost in formatting would leave one position constant; with
    // 2,000 ids each free position takes all sixteen values.
    for (let position = 0; position < 36; position++) {
      if ([8, 13, 14, 18, 19, 23].includes(position)) continue
      expect(new Set(ids.map((id) => id[position])).size).toBe(16)
    }
  })
})
