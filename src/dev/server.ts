import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { compareUrlPaths, scanApp } from '../manifest.ts'
import { EVENTS_FILES } from '../manifest/events-file.ts'
import { instrumentationFile } from '../manifest/instrumentation-file.ts'
import { refreshTaskTypes } from '../manifest/task-types.ts'
import type { ConfigError } from '../manifest.ts'
import { startSvcServer } from '../node/server.ts'
import type { SvcServer } from '../node/options.ts'
import { storeFromEnv } from '../node/store-url.ts'
import { createAppImporter } from '../node/loaders.ts'
import { errorMessage } from '../runtime/errors.ts'
import type { Logger, RuntimeApiRoute, RuntimePage } from '../types.ts'
import { AppModules } from './modules.ts'
import { watchTree, type Watcher } from './watch.ts'

/** WebSocket close code for sockets of a reloaded hot route (RFC 6455 registry: 1012 Service Restart). */
export const RELOAD_CLOSE_CODE = 1012

/** Files a module may import: scripts, TypeScript and JSON. */
const IMPORTABLE = /\.(?:[cm]?[jt]sx?|json)$/

/**
 * The scanned entries, plus the last good entry of every file the scanner
 * dropped for an error (a syntax error mid-edit removes a file from the
 * scan), so that version keeps serving until the file is fixed.
 */
function withLastGood<T extends { path: string; file: string }>(
  scanned: T[],
  previous: ReadonlyArray<Partial<T> & { path: string; module?: unknown }>,
  broken: Set<string>,
): T[] {
  const present = new Set(scanned.map((entry) => entry.file))
  const kept: T[] = []
  for (const { module: _module, ...entry } of previous) {
    if (entry.file !== undefined && broken.has(entry.file) && !present.has(entry.file)) kept.push(entry as unknown as T)
  }
  if (kept.length === 0) return scanned
  // The scanner's order, which decides which of two overlapping paths matches first.
  return [...scanned, ...kept].sort((a, b) => compareUrlPaths(a.path, b.path) || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
}

export interface DevServerOptions {
  /** The app directory. */
  root: string
  /** @default 3000 */
  port?: number
  /** @default 'localhost' */
  host?: string
  /** @default console */
  logger?: Logger
  /**
   * Watch `src/` and reload on change.
   * @default true
   */
  watch?: boolean
}

export interface DevServer {
  readonly server: SvcServer
  readonly url: string
  /** Config errors of the last scan (empty when the app is clean). */
  readonly errors: ConfigError[]
  /** Where runs are kept: `memory`, `SQLite <path>` or `Postgres <url without password>`. */
  readonly store: string
  /** What the server serves now. */
  readonly app: { routes: RuntimeApiRoute[]; pages: RuntimePage[] }
  /** Re-scans and reloads what changed; what the watcher calls. Resolves when the new code serves. */
  reload(changedFiles?: string[]): Promise<void>
  close(): Promise<void>
}

/**
 * The development server: `startSvcServer` in development mode (the task
 * admin surface is open to localhost without a secret), with `src/` watched.
 * On every change the static config is checked again; errors are printed as
 * `file:line:col: message` and the last good version keeps serving. Only
 * changed modules are imported again, so unchanged routes keep their state
 * and their open WebSockets.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const root = resolve(options.root)
  const logger = options.logger ?? console
  const env = { ...process.env, NODE_ENV: process.env.NODE_ENV || 'development' }
  const modules = new AppModules(root)
  let errors: ConfigError[] = []

  // What the server serves now.
  let app: { routes: RuntimeApiRoute[]; pages: RuntimePage[] } = { routes: [], pages: [] }

  const scanAndLoad = async (changedFiles: string[] | undefined) => {
    const scan = await scanApp({ root })
    errors = scan.errors
    for (const error of scan.errors) logger.error(String(error))
    const broken = new Set(scan.errors.map((error) => error.file))
    const routes = withLastGood(scan.routes, app.routes, broken)
    const pages = withLastGood(scan.pages, app.pages, broken)
    refreshTaskTypes(root, routes, scan.events, logger)
    const appFiles = new Set([...routes, ...pages].map((entry) => entry.file))
    // A change to anything that is not a route or page (a shared helper) may
    // affect any module. A route or page loaded before and gone now (deleted,
    // or the old name of a rename) is no such helper: nothing imports it; nor
    // is a folder, or a file no module can import (an editor's backup or swap file).
    const reimportAll =
      changedFiles?.some((file) => IMPORTABLE.test(file) && !appFiles.has(`src/${file}`) && !modules.has(`src/${file}`)) ?? false
    // Broken event schemas keep serving their last good version, as routes do.
    const eventsFile = scan.events?.file ?? EVENTS_FILES.find((file) => broken.has(file))
    const result = await modules.load({ routes, pages, eventsFile }, { broken, reimportAll })
    for (const failure of result.failed) logger.error(`${failure.file}: ${failure.message}`)
    return result
  }

  // The app's providers are registered before any of its modules runs, once:
  // a change to the file takes a restart of svc dev.
  const instrumentation = instrumentationFile(root)
  if (instrumentation) {
    try {
      await createAppImporter(root)(instrumentation)
    } catch (error) {
      logger.error(`${instrumentation}: ${errorMessage(error)}`)
    }
  }
  const first = await scanAndLoad(undefined)
  app = { routes: first.routes, pages: first.pages }
  // Runs outlive a restart of `svc dev` unless SVC_STORE_URL names another store.
  const opened = await storeFromEnv(env, { root, defaultStore: 'sqlite' })
  let server: SvcServer
  try {
    server = await startSvcServer({
      store: opened.store,
      apiRoutes: first.routes,
      pages: first.pages,
      events: first.events,
      port: options.port ?? 3000,
      host: options.host ?? 'localhost',
      env,
      dev: true,
      logger,
      // An app without public/ has nothing to serve, and is not warned about it at every start.
      staticDirs: existsSync(join(root, 'public')) ? [join(root, 'public')] : [],
    })
  } catch (error) {
    await opened.close()
    throw error
  }

  let queue: Promise<void> = Promise.resolve()
  const reload = (changedFiles?: string[]): Promise<void> => {
    queue = queue.then(async () => {
      const result = await scanAndLoad(changedFiles)
      // Sockets of a hot route whose module was imported again, or that is no
      // longer there (deleted, or no longer hot), still run the old code:
      // close them so clients reconnect to what the path serves now.
      const current = new Map(result.routes.map((route) => [route.path, route]))
      const stale = new Set(
        app.routes
          .filter((route) => route.module.websocket !== undefined && current.get(route.path)?.module !== route.module)
          .map((route) => route.path),
      )
      await server.reload({ apiRoutes: result.routes, pages: result.pages, events: result.events })
      app = { routes: result.routes, pages: result.pages }
      if (stale.size) server.closeWebSockets(RELOAD_CLOSE_CODE, 'Route reloaded', (path) => stale.has(path))
      if (result.reloaded.length) logger.info(`[svc] reloaded ${result.reloaded.join(', ')}`)
    })
    // A failed reload is reported and the queue goes on with the next change.
    queue = queue.catch((error) => logger.error('[svc] reload failed:', error))
    return queue
  }

  const watcher: Watcher | undefined = options.watch === false ? undefined : watchTree(join(root, 'src'), (files) => void reload(files))

  return {
    server,
    url: server.url,
    store: opened.description,
    get errors() {
      return errors
    },
    get app() {
      return app
    },
    reload,
    async close() {
      watcher?.close()
      await queue
      await server.close()
      await opened.close()
    },
  }
}
