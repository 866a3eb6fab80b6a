/**
 * The runtime entry of `svc build --target deno`: serves a built app on
 * `Deno.serve` on `PORT` (default 3000) and `HOST` (default every
 * interface), keeping runs in the store `SVC_STORE_URL` names, else in
 * `.svc/runs.db` under the working directory.
 */
import { type BuiltApp, serveOnHost } from '#svc/serve/app.ts'
import { denoHost } from '#svc/serve/deno.ts'
import { startWebServer, type WebServer, type WebServerOptions } from '#svc/serve/server.ts'

export { PAGES, SERVER_TASKS } from '#svc/node/server-parts.ts'
export type { BuiltApp as DenoApp, WebServer as DenoServer, WebServerOptions as DenoServerOptions }

export function serveApp(app: BuiltApp): Promise<WebServer> {
  return serveOnHost(app, denoHost)
}

/** `startSvcServer` on Deno: the same options and the same behaviour, on `Deno.serve`. */
export function startDenoServer(options: WebServerOptions): Promise<WebServer> {
  return startWebServer(options, denoHost)
}
