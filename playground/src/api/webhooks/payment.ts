// POST /api/webhooks/payment, as a payment provider would call it: the body says which
// order was paid, and the provider's delivery id (Webhook-Id) makes a retried delivery
// the same event, so the order moves on once.
import * as v from 'valibot'
import { defineSchema, sendEvent, type SvcRequest } from 'svcjs'

export const schema = defineSchema({
  body: v.object({ orderId: v.string(), amount: v.number() }),
})

export async function POST(req: SvcRequest) {
  const payment = req.valid('json') as { orderId: string; amount: number }
  const sent = await sendEvent('order.paid', payment, { id: req.header('webhook-id') })
  return { event: sent.id, resumed: sent.resumed.length }
}
