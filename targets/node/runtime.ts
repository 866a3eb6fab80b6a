/**
 * The runtime entry of `svc build --target node`: serves a built app with
 * `startSvcServer` on `PORT` (default 3000) and `HOST`.
 */
import type { SvcServer, SvcServerOptions } from '../../src/node/options.ts'
import { startSvcServer } from '../../src/node/server.ts'
import type { RuntimeApiRoute, RuntimePage } from '../../src/types.ts'

export interface NodeApp {
  routes: RuntimeApiRoute[]
  pages: RuntimePage[]
  cache?: SvcServerOptions['cache']
  staticDirs?: string[]
}

export async function serveApp(app: NodeApp): Promise<SvcServer> {
  const raw = process.env.PORT
  const port = raw === undefined || raw === '' ? 3000 : Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`PORT must be a whole number from 0 to 65535 (got "${raw}")`)
  }
  const server = await startSvcServer({ apiRoutes: app.routes, pages: app.pages, cache: app.cache, staticDirs: app.staticDirs, port })
  console.log(`svc listening on http://${process.env.HOST ?? 'localhost'}:${server.port}`)
  return server
}
