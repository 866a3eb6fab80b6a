import type { SvcRequest } from 'svcjs'

// GET /api/hello?name=Ada. Whatever a handler returns is sent as JSON.
export function GET(req: SvcRequest) {
  return { hello: req.query('name') ?? 'world' }
}
