/**
 * The runtime entry of a target whose output is one long-lived server
 * (node: targets/node/runtime.ts; bun and deno: src/serve/app.ts): a built
 * app served on `PORT` (default 3000) and `HOST` (default every interface),
 * keeping runs in the store `SVC_STORE_URL` names, else in `.svc/runs.db`
 * under the working directory.
 */
import type { RuntimeApiRoute, RuntimePage } from '../types.ts'
import { listenFailure } from './listen.ts'
import type { RunningServer, SvcServerOptions } from './options.ts'
import type { ServerParts } from './server-parts.ts'

/** What the generated server.mjs hands to `serveApp`. */
export interface BuiltApp {
  routes: RuntimeApiRoute[]
  pages: RuntimePage[]
  /** The `events` export of the app's `src/events.ts`, when it has one. */
  events?: SvcServerOptions['events']
  cache?: SvcServerOptions['cache']
  staticDirs?: string[]
  /** `otelTelemetry(api)`, when the app depends on `@opentelemetry/api`. */
  telemetry?: SvcServerOptions['telemetry']
  /** The parts of svc the app uses: without `tasks`, no run store is opened and no task engine loaded. */
  parts: ServerParts
}

/**
 * A built server is a deployment artifact: in a container or on a VM its
 * clients arrive on a non-loopback interface, so it binds all of them unless
 * `HOST` says otherwise, whatever `NODE_ENV` is (as Nitro's and Next's
 * standalone servers do). `startSvcServer`'s own default stays loopback
 * outside production, for servers started from code during development.
 */
const ALL_INTERFACES = '0.0.0.0'

/**
 * Serves `app` with `start`, and logs the address it listens on, `boundUrl`
 * of the server: what a supervisor waits for.
 */
export async function serveBuiltApp<S extends RunningServer>(
  app: BuiltApp,
  start: (options: SvcServerOptions, parts: ServerParts) => Promise<S>,
  boundUrl: (server: S) => string = (server) => server.url,
): Promise<S> {
  const raw = process.env.PORT
  const port = raw === undefined || raw === '' ? 3000 : Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`PORT must be a whole number from 0 to 65535 (got "${raw}")`)
  }
  // A persistent host keeps runs across restarts by default. The working
  // directory, not the output folder: `svc build` empties that folder, and the
  // Dockerfile's WORKDIR is where the server runs.
  // An app without tasks keeps no runs: nothing is opened, and no `.svc/` is made.
  const tasks = app.parts.tasks
  const opened = tasks ? await tasks.storeFromEnv(process.env, { root: process.cwd(), defaultStore: 'sqlite' }) : undefined
  // Logged before the listening line, which is what a supervisor waits for.
  if (opened) console.log(`svc runs: ${opened.description} (SVC_STORE_URL picks another store)`)
  else if (process.env.SVC_STORE_URL?.trim())
    console.warn('[svc] SVC_STORE_URL is set, but this app has no tasks: it keeps no runs, and no store is opened')
  let server: S
  try {
    server = await start(
      {
        apiRoutes: app.routes,
        pages: app.pages,
        events: app.events,
        cache: app.cache,
        staticDirs: app.staticDirs,
        telemetry: app.telemetry,
        port,
        host: process.env.HOST || ALL_INTERFACES,
        store: opened?.store,
      },
      app.parts,
    )
  } catch (error) {
    await opened?.close()
    throw listenFailure(error, port, process.env.HOST || ALL_INTERFACES, 'set PORT to another port (PORT=0 picks a free one)')
  }
  const close = server.close
  // The server closes only what it opened; this store is ours to close after it.
  server.close = async () => {
    await close()
    await opened?.close()
  }
  console.log(`svc listening on ${boundUrl(server)}`)
  return server
}
