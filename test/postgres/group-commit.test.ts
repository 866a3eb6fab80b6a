import { describe, expect, it } from 'vitest'
import { ItemFailure, togetherOrAlone } from '../../src/postgres/group-commit.ts'

/** A send that fails the batch of more than one with `error`, and answers each item alone. */
function sender(error: unknown) {
  const sent: number[][] = []
  const send = async (batch: number[]) => {
    sent.push(batch)
    if (batch.length > 1) throw error
    if (batch[0] === 2) throw Object.assign(new Error('duplicate key'), { code: '23505' })
    return batch.map((n) => n * 10)
  }
  return { sent, send }
}

describe('togetherOrAlone', () => {
  it('sends each call alone when Postgres refused the batch, each answering for itself', async () => {
    const { sent, send } = sender(Object.assign(new Error('duplicate key'), { code: '23505' }))
    const answers = await togetherOrAlone([1, 2, 3], send)
    expect(answers[0]).toBe(10)
    expect(answers[1]).toBeInstanceOf(ItemFailure)
    expect(answers[2]).toBe(30)
    expect(sent).toEqual([[1, 2, 3], [1], [2], [3]])
  })

  it('fails the batch whole when its connection failed, since its statement may have committed', async () => {
    for (const error of [
      Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ]) {
      const { sent, send } = sender(error)
      await expect(togetherOrAlone([1, 2, 3], send)).rejects.toBe(error)
      expect(sent).toEqual([[1, 2, 3]])
    }
  })
})
