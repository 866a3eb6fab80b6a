/**
 * The runtime entry of `svc build --target node`: serves a built app with
 * `startSvcServer` on `PORT` (default 3000) and `HOST` (default every
 * interface), keeping runs in the store `SVC_STORE_URL` names, else in
 * `.svc/runs.db` under the working directory.
 */
import '#svc/runtime/node-version.ts'
import type { AddressInfo } from 'node:net'
import type { SvcServer, SvcServerOptions } from '#svc/node/options.ts'
import { startSvcServer } from '#svc/node/server.ts'
import { storeFromEnv } from '#svc/node/store-url.ts'
import type { RuntimeApiRoute, RuntimePage } from '#svc/types.ts'

export interface NodeApp {
  routes: RuntimeApiRoute[]
  pages: RuntimePage[]
  cache?: SvcServerOptions['cache']
  staticDirs?: string[]
}

/**
 * The built server is a deployment artifact: in a container or on a VM its
 * clients arrive on a non-loopback interface, so it binds all of them unless
 * `HOST` says otherwise, whatever `NODE_ENV` is (as Nitro's and Next's
 * standalone servers do). `startSvcServer`'s own default stays loopback
 * outside production, for servers started from code during development.
 */
const ALL_INTERFACES = '0.0.0.0'

export async function serveApp(app: NodeApp): Promise<SvcServer> {
  const raw = process.env.PORT
  const port = raw === undefined || raw === '' ? 3000 : Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`PORT must be a whole number from 0 to 65535 (got "${raw}")`)
  }
  const host = process.env.HOST || ALL_INTERFACES
  // A persistent host keeps runs across restarts by default. The working
  // directory, not the output folder: `svc build` empties that folder, and the
  // Dockerfile's WORKDIR is where the server runs.
  const opened = await storeFromEnv(process.env, { root: process.cwd(), defaultStore: 'sqlite' })
  // Logged before the listening line, which is what a supervisor waits for.
  console.log(`svc runs: ${opened.description} (SVC_STORE_URL picks another store)`)
  let server: SvcServer
  try {
    server = await startSvcServer({
      apiRoutes: app.routes,
      pages: app.pages,
      cache: app.cache,
      staticDirs: app.staticDirs,
      port,
      host,
      store: opened.store,
    })
  } catch (error) {
    await opened.close()
    throw error
  }
  const close = server.close
  // The server closes only what it opened; this store is ours to close after it.
  server.close = async () => {
    await close()
    await opened.close()
  }
  console.log(`svc listening on ${boundUrl(server)}`)
  return server
}

/** The address the socket is bound to, which for a HOST such as `localhost` is the one it resolved to. */
function boundUrl(server: SvcServer): string {
  const { address, family, port } = server.server.address() as AddressInfo
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`
}
