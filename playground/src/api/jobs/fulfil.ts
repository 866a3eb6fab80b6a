// An order that waits for its payment, then ships, telling the page how far it got.
// Started by POST /api/orders; the payment arrives as the order.paid event (POST /api/webhooks/payment).
import * as v from 'valibot'
import type { SqlTransaction, TaskContext } from 'svcjs'

export const route = { kind: 'task', timeout: 30_000 } as const

export const input = v.object({ orderId: v.string() })

export async function POST(ctx: TaskContext<{ orderId: string }>) {
  const { orderId } = ctx.input
  await ctx.step.run('reserve', () => `reserved stock for ${orderId}`)
  await ctx.stream('progress', { stage: 'awaiting payment', percent: 25 })
  // A payment sent a moment before the wait began still counts (lookbackSeconds).
  const paid = await ctx.step.waitForEvent<{ orderId: string; amount: number }>('payment', 'order.paid', {
    match: { orderId },
    timeoutSeconds: 60 * 60,
    lookbackSeconds: 60,
  })
  if ('timedOut' in paid) return { orderId, status: 'expired' }
  // The payment goes into the app's own ledger, in the run store's database, in one
  // transaction with this step's record: booked once, however often the run replays.
  const amount = paid.event.data?.amount ?? 0
  const booked = await ctx.step.transaction('book', (tx: SqlTransaction) => {
    tx.run('CREATE TABLE IF NOT EXISTS ledger (order_id TEXT PRIMARY KEY, amount INTEGER NOT NULL)')
    tx.run('INSERT INTO ledger (order_id, amount) VALUES (?, ?)', orderId, amount)
    return tx.query<{ total: number }>('SELECT sum(amount) AS total FROM ledger')[0].total
  })
  for (const [i, stage] of ['packed', 'labelled', 'shipped'].entries()) {
    await ctx.step.run(stage, () => `${orderId} ${stage}`)
    await ctx.stream('progress', { stage, percent: 50 + i * 25 })
  }
  return { orderId, status: 'shipped', amount, booked }
}
