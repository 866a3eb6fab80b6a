/**
 * Loads an app from disk: scans `src/api/` and `src/pages/` (without
 * evaluating them), refuses to go on while any config error remains, then
 * imports each file through jiti, so TypeScript app files load on any Node
 * version. The results feed `startSvcServer` directly:
 *
 *   const root = process.cwd()
 *   const server = await startSvcServer({ apiRoutes: await loadApiRoutes({ root }), pages: await loadPages({ root }) })
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createJiti, type Jiti } from 'jiti'
import { selfAliases } from '../build/self.ts'
import { ManifestError, scanApp } from '../manifest.ts'
import type { PageModule, RouteModule, RuntimeApiRoute, RuntimePage } from '../types.ts'

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
 * Imports app files (paths relative to `root`) through one jiti instance
 * with a fresh module cache, so a new importer sees edited files. A failed
 * import names the file.
 */
export function createAppImporter(root: string): <T>(file: string) => Promise<T> {
  // `svc` imports in app code resolve to this copy of svc, so the app and the
  // server share one runtime (one active task runtime, one set of error classes).
  const jiti: Jiti = createJiti(pathToFileURL(`${root}/`).href, { moduleCache: false, alias: selfAliases() })
  return async <T>(file: string): Promise<T> => {
    try {
      return await jiti.import<T>(resolve(root, file))
    } catch (error) {
      const wrapped = new Error(`Could not load ${file}: ${error instanceof Error ? error.message : String(error)}`)
      wrapped.cause = error
      throw wrapped
    }
  }
}

/** The app's API routes: each manifest entry plus its loaded module exports. */
export async function loadApiRoutes(options: LoadOptions): Promise<RuntimeApiRoute[]> {
  const root = checkRoot(options, 'loadApiRoutes()')
  const { routes } = await scan(root)
  const load = createAppImporter(root)
  return Promise.all(routes.map(async (route) => ({ ...route, module: await load<RouteModule>(route.file) })))
}

/** The app's pages: each manifest entry plus its loaded module (the default export renders). */
export async function loadPages(options: LoadOptions): Promise<RuntimePage[]> {
  const root = checkRoot(options, 'loadPages()')
  const { pages } = await scan(root)
  const load = createAppImporter(root)
  return Promise.all(pages.map(async (page) => ({ ...page, module: await load<PageModule>(page.file) })))
}
