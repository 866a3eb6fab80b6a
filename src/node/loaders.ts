/**
 * Loads an app from disk: scans `src/api/` and `src/pages/` (without
 * evaluating them), refuses to go on while any config error remains, then
 * imports each file through jiti, so TypeScript app files load on any Node
 * version. The results feed `startSvcServer` directly:
 *
 *   const root = process.cwd()
 *   const server = await startSvcServer({ apiRoutes: await loadApiRoutes({ root }), pages: await loadPages({ root }) })
 */
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createJiti, type Jiti } from 'jiti'
import { ManifestError, scanApp } from '../manifest.ts'
import type { PageModule, RouteModule, RuntimeApiRoute, RuntimePage } from '../types.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'
import { selfAliases } from '../self/entries.ts'

export interface LoadOptions {
  /** The app directory: routes come from `<root>/src/api`, pages from `<root>/src/pages`. */
  root: string
}

function checkRoot(options: LoadOptions, where: string): string {
  if (options === null || typeof options !== 'object' || typeof options.root !== 'string' || options.root === '') {
    const got = options === null || typeof options !== 'object' ? String(options) : JSON.stringify(options.root)
    throw new TypeError(`${where}: root must be the app directory (got ${got})`)
  }
  return resolve(options.root)
}

async function scan(root: string) {
  const result = await scanApp({ root })
  // Every error at once, one `file:line:col: message` line each.
  if (result.errors.length > 0) throw new ManifestError(result.errors)
  return result
}

/**
 * The modules of svc that app code imports, as this process loaded them. App
 * files get these very objects for `svcjs`, `svcjs/node` and `svcjs/manifest`, so
 * the app and the server share one runtime: one set of error classes (a
 * thrown `SvcError` keeps its status), one active task runtime. Resolving
 * those specifiers to svc's files instead would evaluate a second copy.
 * `svcjs/node` is put together as its entry is, from api.ts and this module's
 * exports: the entry re-exports this module, so importing it would be a cycle.
 */
let selfModules: Promise<Record<string, unknown>> | undefined
function loadSelfModules(): Promise<Record<string, unknown>> {
  selfModules ??= Promise.all([import('../index.ts'), import('./api.ts'), import('../manifest.ts')]).then(([index, api, manifest]) => ({
    svcjs: index,
    'svcjs/node': { ...api, loadApiRoutes, loadPages },
    'svcjs/manifest': manifest,
  }))
  return selfModules
}

// jiti keeps the modules it evaluates in Node's CommonJS cache (`moduleCache`).
const moduleCache = createRequire(import.meta.url).cache

// One import at a time: two evaluations of one helper that overlap (two
// routes importing it at once) would each enter the cache as its own instance.
let importQueue: Promise<unknown> = Promise.resolve()

/**
 * Imports app files (paths relative to `root`) through jiti. Modules are
 * cached for the whole process, as Node caches imports: a helper that several
 * routes and pages import is one instance, and its state is shared, as in a
 * built bundle. `forgetAppModules` drops files from the cache so the next
 * import evaluates them again (the dev server does on edits). A failed import
 * names the file.
 */
export function createAppImporter(root: string): <T>(file: string) => Promise<T> {
  let jiti: Jiti | undefined
  const load = async <T>(file: string): Promise<T> => {
    jiti ??= createJiti(pathToFileURL(`${root}/`).href, {
      moduleCache: true,
      virtualModules: await loadSelfModules(),
      // svc's other entry points (the target shims), should app code import one.
      alias: selfAliases(),
    })
    try {
      return await jiti.import<T>(resolve(root, file))
    } catch (error) {
      const wrapped = new Error(`Could not load ${file}: ${error instanceof Error ? error.message : String(error)}`)
      wrapped.cause = error
      throw wrapped
    }
  }
  return <T>(file: string): Promise<T> => {
    const next = importQueue.then(() => load<T>(file))
    importQueue = next.catch(() => {})
    return next
  }
}

/**
 * Drops app modules from the module cache, so the next import evaluates them
 * again: the given files (relative to `root`), or, without a list, every file
 * of the app outside `node_modules`.
 */
export function forgetAppModules(root: string, files?: readonly string[]): void {
  const keys = (path: string) => {
    const out = [path]
    try {
      const real = realpathSync(path)
      if (real !== path) out.push(real)
    } catch {
      // Deleted: only its old path can be in the cache.
    }
    return out
  }
  const wanted = files && new Set(files.flatMap((file) => keys(resolve(root, file))))
  const prefixes = keys(resolve(root)).map((dir) => dir + sep)
  const dependencies = `${sep}node_modules${sep}`
  for (const key of Object.keys(moduleCache)) {
    const hit = wanted ? wanted.has(key) : prefixes.some((prefix) => key.startsWith(prefix)) && !key.includes(dependencies)
    if (hit) delete moduleCache[key]
  }
}

/** The app's API routes: each manifest entry plus its loaded module exports. */
export async function loadApiRoutes(options: LoadOptions): Promise<RuntimeApiRoute[]> {
  const root = checkRoot(options, 'loadApiRoutes()')
  const { routes } = await scan(root)
  const load = createAppImporter(root)
  return Promise.all(routes.map(async (route) => ({ ...route, module: await load<RouteModule>(route.file) })))
}

/**
 * The app's event schemas: the `events` export of its `src/events.ts`
 * (docs/events.md "Typed events"), for `startSvcServer({ events })`, or
 * `undefined` when the app has none.
 */
export async function loadEvents(options: LoadOptions): Promise<EventSchemas | undefined> {
  const root = checkRoot(options, 'loadEvents()')
  const { events } = await scan(root)
  if (!events) return undefined
  return (await createAppImporter(root)<{ events: EventSchemas }>(events.file)).events
}

/** The app's pages: each manifest entry plus its loaded module (the default export renders). */
export async function loadPages(options: LoadOptions): Promise<RuntimePage[]> {
  const root = checkRoot(options, 'loadPages()')
  const { pages } = await scan(root)
  const load = createAppImporter(root)
  return Promise.all(pages.map(async (page) => ({ ...page, module: await load<PageModule>(page.file) })))
}
