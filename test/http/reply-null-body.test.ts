import { describe, expect, it } from 'vitest'
import { createApiApp, type RuntimeApiRoute } from '../../src/index.ts'
import { recordingLogger, serve } from './_helpers.ts'

// Fetch forbids a body with 204, 205 and 304 (Fetch standard, "null body
// status"): Response throws. A reply built with one of them must drop the
// body, the same on every target.
const routes: RuntimeApiRoute[] = [
  { path: '/api/json', module: { DELETE: (_req, reply) => reply.status(204).json({ deleted: true }) } },
  { path: '/api/text', module: { DELETE: (_req, reply) => reply.text('', 204) } },
  { path: '/api/reset', module: { POST: (_req, reply) => reply.html('<p>done</p>', 205) } },
  {
    path: '/api/value',
    module: {
      GET: (_req, reply) => {
        reply.status(304).header('etag', '"v1"')
        return { unchanged: true }
      },
    },
  },
]

const cases = [
  ['DELETE', '/api/json', 204],
  ['DELETE', '/api/text', 204],
  ['POST', '/api/reset', 205],
  ['GET', '/api/value', 304],
] as const

describe('replies with a status that has no body', () => {
  it('answer with that status and no body from a Web fetch handler (edge and function targets)', async () => {
    const logger = recordingLogger()
    const app = createApiApp({ routes, logger })
    for (const [method, path, status] of cases) {
      const res = await app.fetch(new Request(`http://svc${path}`, { method }))
      expect(res.status, path).toBe(status)
      expect(await res.text(), path).toBe('')
    }
    expect(logger.lines).toEqual([])
  })

  it('answer the same behind startSvcServer', async () => {
    const server = await serve({ apiRoutes: routes })
    for (const [method, path, status] of cases) {
      const res = await fetch(`${server.url}${path}`, { method })
      expect(res.status, path).toBe(status)
      expect(await res.text(), path).toBe('')
    }
    const unchanged = await fetch(`${server.url}/api/value`)
    expect(unchanged.headers.get('etag')).toBe('"v1"')
  })
})
