/**
 * The runtime entries of `svc build --target bun` and `--target deno`
 * (targets/bun/runtime.ts, targets/deno/runtime.ts): a built app served by
 * `startWebServer`, as the node target serves one (src/node/built-app.ts).
 */
import { type BuiltApp, serveBuiltApp } from '../node/built-app.ts'
import type { WebHost } from './host.ts'
import { startWebServerWith, type WebServer } from './server.ts'

export type { BuiltApp }

export function serveOnHost(app: BuiltApp, host: WebHost): Promise<WebServer> {
  // Named before anything is opened: the process runs on another runtime than the one the server was built for.
  if (!host.present) {
    throw new Error(
      `This server was built for ${host.name} (svc build --target ${host.target}); run it with ${host.target}, or build for the runtime you have (svc build --target node, for Node)`,
    )
  }
  return serveBuiltApp(app, (options, parts) => startWebServerWith(options, host, parts))
}
