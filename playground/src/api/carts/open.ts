// A cart that lives in a run: it takes `add-item` updates, each answered with the cart so far,
// until a `checkout` signal closes it. Start it with POST /__tasks/carts.open {}, then
// POST /__tasks/runs/<id>/updates/add-item {"sku":"tea","quantity":2} and, to close it,
// POST /__tasks/runs/<id>/signals/checkout {"card":"visa"}. The items live in memory: each
// time the run replays, the handler is given the updates it answered before, in order.
import * as v from 'valibot'
import type { TaskContext } from 'svcjs'

export const route = { kind: 'task', retries: 0 } as const

const item = v.object({ sku: v.pipe(v.string(), v.minLength(1)), quantity: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 1) })

export async function POST(ctx: TaskContext) {
  const items = new Map<string, number>()
  ctx.onUpdate('add-item', {
    input: item,
    handler: ({ sku, quantity }) => {
      if (items.size >= 20 && !items.has(sku)) throw new Error('A cart holds at most 20 different items')
      items.set(sku, (items.get(sku) ?? 0) + quantity)
      return Object.fromEntries(items)
    },
  })
  const checkout = await ctx.step.waitForSignal<{ card?: string }>('checkout', 'checkout', { timeoutSeconds: 24 * 60 * 60 })
  if ('timedOut' in checkout) return { status: 'abandoned', items: Object.fromEntries(items) }
  return { status: 'checked out', items: Object.fromEntries(items), card: checkout.data?.card ?? null }
}
