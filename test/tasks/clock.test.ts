import { describe, expect, it } from 'vitest'
import { isoAt } from '../../src/runtime/tasks/base/clock.ts'

describe('record timestamps', () => {
  it('are the ISO 8601 text of their millisecond, whether or not it was stamped just before', () => {
    const instants = [0, 1, 1, 1_700_000_000_123, 1_700_000_000_123, 1_700_000_000_124, 1.9, 1_700_000_000_000 + 0.5]
    for (const ms of instants) expect(isoAt(ms)).toBe(new Date(ms).toISOString())
  })
})
