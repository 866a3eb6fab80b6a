/**
 * The runtime entry of `svc build --target bun`: serves a built app on
 * `Bun.serve` on `PORT` (default 3000) and `HOST` (default every
 * interface), keeping runs in the store `SVC_STORE_URL` names, else in
 * `.svc/runs.db` under the working directory.
 */
import { type BuiltApp, serveOnHost } from '#svc/serve/app.ts'
import { bunHost } from '#svc/serve/bun.ts'
import { startWebServer, type WebServer, type WebServerOptions } from '#svc/serve/server.ts'

export { PAGES, SERVER_TASKS } from '#svc/node/server-parts.ts'
export type { BuiltApp as BunApp, WebServer as BunServer, WebServerOptions as BunServerOptions }

export function serveApp(app: BuiltApp): Promise<WebServer> {
  return serveOnHost(app, bunHost)
}

/** `startSvcServer` on Bun: the same options and the same behaviour, on `Bun.serve`. */
export function startBunServer(options: WebServerOptions): Promise<WebServer> {
  return startWebServer(options, bunHost)
}
