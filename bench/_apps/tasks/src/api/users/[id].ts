// A route with a parameter and a schema: GET /api/users/42?fields=name
import * as v from 'valibot'
import { defineSchema, type SvcRequest } from 'svcjs'

export const schema = defineSchema({
  params: v.object({ id: v.pipe(v.string(), v.regex(/^\d+$/)) }),
  query: v.object({ fields: v.optional(v.string()) }),
})

export function GET(req: SvcRequest) {
  const { id } = req.valid('param') as { id: string }
  return { id: Number(id), name: `user ${id}` }
}
