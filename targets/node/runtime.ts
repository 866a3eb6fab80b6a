/**
 * The runtime entry of `svc build --target node`: serves a built app with
 * `startSvcServer` (#svc/node/built-app.ts says on which port and host, and
 * where runs are kept).
 */
import '#svc/runtime/node-version.ts'
import type { AddressInfo } from 'node:net'
import { type BuiltApp, serveBuiltApp } from '#svc/node/built-app.ts'
import type { SvcServer } from '#svc/node/options.ts'
import { startServer } from '#svc/node/server.ts'

export type { BuiltApp as NodeApp }
export { PAGES, SERVER_TASKS } from '#svc/node/server-parts.ts'

export function serveApp(app: BuiltApp): Promise<SvcServer> {
  return serveBuiltApp(app, startServer, boundUrl)
}

/** The address the socket is bound to, which for a HOST such as `localhost` is the one it resolved to. */
function boundUrl(server: SvcServer): string {
  const { address, family, port } = server.server.address() as AddressInfo
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`
}
