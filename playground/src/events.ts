// The app's events and the shape of their data: sendEvent() and POST /__events
// check it, and `svc types` types it.
import * as v from 'valibot'

export const events = {
  'order.paid': v.object({ orderId: v.string(), amount: v.number() }),
}
