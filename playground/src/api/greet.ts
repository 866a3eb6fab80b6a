// A serverless route with a schema: GET /api/greet?name=Ada
import * as v from 'valibot'
import { defineSchema, type SvcRequest } from 'svcjs'

export const schema = defineSchema({
  query: v.object({ name: v.pipe(v.string(), v.minLength(1)), excited: v.optional(v.picklist(['yes', 'no'])) }),
})

export function GET(req: SvcRequest) {
  const { name, excited } = req.valid('query') as { name: string; excited?: 'yes' | 'no' }
  return { message: `Hello, ${name}${excited === 'yes' ? '!' : '.'}` }
}
