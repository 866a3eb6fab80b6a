/**
 * The runtime entries of `svc build --target bun` and `--target deno`
 * (targets/bun/runtime.ts, targets/deno/runtime.ts): a built app served by
 * `startWebServer` on `PORT` (default 3000) and `HOST` (default every
 * interface), keeping runs in the store `SVC_STORE_URL` names, else in
 * `.svc/runs.db` under the working directory, as the node target does.
 */
import type { SvcServerOptions } from '../node/options.ts'
import { storeFromEnv } from '../node/store-url.ts'
import type { RuntimeApiRoute, RuntimePage } from '../types.ts'
import type { WebHost } from './host.ts'
import { startWebServer, type WebServer } from './server.ts'

export interface BuiltApp {
  routes: RuntimeApiRoute[]
  pages: RuntimePage[]
  cache?: SvcServerOptions['cache']
  staticDirs?: string[]
}

/**
 * A built server is a deployment artifact: in a container or on a VM its
 * clients arrive on a non-loopback interface, so it binds all of them unless
 * `HOST` says otherwise, whatever `NODE_ENV` is.
 */
const ALL_INTERFACES = '0.0.0.0'

export async function serveBuiltApp(app: BuiltApp, host: WebHost): Promise<WebServer> {
  if (!host.present) {
    throw new Error(
      `This server was built for ${host.name} (svc build --target ${host.target}); run it with ${host.target}, or build for the runtime you have (svc build --target node, for Node)`,
    )
  }
  const raw = process.env.PORT
  const port = raw === undefined || raw === '' ? 3000 : Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`PORT must be a whole number from 0 to 65535 (got "${raw}")`)
  }
  // The working directory, not the output folder: `svc build` empties that folder.
  const opened = await storeFromEnv(process.env, { root: process.cwd(), defaultStore: 'sqlite' })
  // Logged before the listening line, which is what a supervisor waits for.
  console.log(`svc runs: ${opened.description} (SVC_STORE_URL picks another store)`)
  let server: WebServer
  try {
    server = await startWebServer(
      {
        apiRoutes: app.routes,
        pages: app.pages,
        cache: app.cache,
        staticDirs: app.staticDirs,
        port,
        host: process.env.HOST || ALL_INTERFACES,
        store: opened.store,
      },
      host,
    )
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
  console.log(`svc listening on ${server.url}`)
  return server
}
