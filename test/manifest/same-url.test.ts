import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { scanApp } from '../../src/manifest.ts'

const root = fileURLToPath(new URL('../fixtures/same-url-app', import.meta.url))

// Issue "Route scanning": two files that map to the same URL are an error
// naming both. Parameter names do not change which requests a pattern
// matches, so users/[id].ts and users/[slug].ts are one URL, and a router
// would only ever reach one of them.
describe('files whose URL patterns differ only in parameter names', () => {
  it('are reported as one URL declared twice, naming both files', async () => {
    const { errors } = await scanApp({ root })
    expect(errors.map(String)).toEqual([
      'src/api/files/[...rest]/index.ts:1:1: URL /api/files/:rest* (as /api/files/:path*) is declared by both src/api/files/[...path].ts and src/api/files/[...rest]/index.ts; rename or remove one of them',
      'src/api/orgs/[org]/[member].ts:1:1: URL /api/orgs/:org/:member (as /api/orgs/:id/:user) is declared by both src/api/orgs/[id]/[user].ts and src/api/orgs/[org]/[member].ts; rename or remove one of them',
      'src/api/users/[slug].ts:1:1: URL /api/users/:slug (as /api/users/:id) is declared by both src/api/users/[id].ts and src/api/users/[slug].ts; rename or remove one of them',
      'src/pages/blog/[b].ts:1:1: URL /blog/:b (as /blog/:a) is declared by both src/pages/blog/[a].ts and src/pages/blog/[b].ts; rename or remove one of them',
    ])
  })

  it('a parameter next to a static name or a catch-all is not a duplicate', async () => {
    const { routes } = await scanApp({ root })
    const paths = routes.map((route) => route.path)
    expect(paths).toContain('/api/users/me')
    expect(paths).toContain('/api/files/:name')
    expect(paths).toContain('/api/files/:rest*')
  })
})
