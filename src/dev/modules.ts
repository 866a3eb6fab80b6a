import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ManifestPage, ManifestRoute, PageModule, RouteModule, RuntimeApiRoute, RuntimePage } from '../types.ts'
import { createAppImporter, forgetAppModules } from '../node/loaders.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'
import { contentHash, helpersDigest, taskVersion } from './task-versions.ts'

interface Loaded {
  hash: string
  module: RouteModule | PageModule
  /** A task's version, of the code it was imported from (task-versions.ts). */
  version?: string
}

export interface LoadResult {
  routes: RuntimeApiRoute[]
  pages: RuntimePage[]
  /** The `events` export of the app's event schemas file, when it has one. */
  events?: EventSchemas
  /** Files whose module was (re)imported by this load. */
  reloaded: string[]
  /** Files that failed to import; their previous version, if any, stays. */
  failed: Array<{ file: string; message: string }>
}

/**
 * The app's modules as the dev server last loaded them. A reload imports
 * only the files whose content changed, so unchanged routes keep their
 * module (and its module-scope state, and the WebSockets attached to it).
 * When a file that is not a route or page changes (a shared helper), every
 * module is imported again, since any of them may use it. Each task route
 * carries the version of the code it was imported from.
 */
export class AppModules {
  readonly root: string
  #loaded = new Map<string, Loaded>()
  /** The manifest entry each file was last served with while it had no config error. */
  #entries = new Map<string, ManifestRoute | ManifestPage>()

  constructor(root: string) {
    this.root = root
  }

  async load(
    scanned: { routes: ManifestRoute[]; pages: ManifestPage[]; eventsFile?: string },
    options: { broken?: Set<string>; reimportAll?: boolean } = {},
  ): Promise<LoadResult> {
    const importer = createAppImporter(this.root)
    // Modules stay cached between loads, so an unchanged helper remains the
    // one instance every route holds. A changed helper may affect any module,
    // so then the whole app is evaluated again; so it is on the first load,
    // since the process may have imported this app before.
    if (options.reimportAll || this.#loaded.size === 0) forgetAppModules(this.root)
    const reloaded: string[] = []
    const failed: LoadResult['failed'] = []
    const seen = new Set<string>()
    // Files that keep their previous module, for an error in the new one.
    const kept = new Set<string>()

    // Read once per load, and only when a task is imported.
    const modules = new Set([...scanned.routes, ...scanned.pages].map((entry) => entry.file))
    let helpers: string | undefined
    const versionOf = (file: string, hash: string) => taskVersion(file, hash, (helpers ??= helpersDigest(this.root, modules)))

    const resolveModule = async (file: string, task = false): Promise<Loaded | undefined> => {
      seen.add(file)
      const previous = this.#loaded.get(file)
      // A file with config errors keeps serving its last good version, if it had one.
      if (options.broken?.has(file)) {
        kept.add(file)
        return previous
      }
      let hash: string
      try {
        hash = contentHash(readFileSync(join(this.root, file)))
      } catch {
        return undefined // deleted between the scan and now
      }
      if (previous && previous.hash === hash && !options.reimportAll) return previous
      // Only this file is evaluated again; the helpers it imports are the cached ones.
      forgetAppModules(this.root, [file])
      try {
        const module = await importer<RouteModule | PageModule>(file)
        const loaded: Loaded = { hash, module, ...(task ? { version: versionOf(file, hash) } : {}) }
        this.#loaded.set(file, loaded)
        reloaded.push(file)
        return loaded
      } catch (error) {
        failed.push({ file, message: error instanceof Error ? error.message : String(error) })
        kept.add(file)
        return previous
      }
    }

    // A file that serves its last good module serves it with its last good
    // config: the new config may be the mistake (a misspelled `retries`
    // would otherwise serve the old task with none).
    const served = <T extends ManifestRoute | ManifestPage>(entry: T): T => {
      if (kept.has(entry.file)) return (this.#entries.get(entry.file) as T | undefined) ?? entry
      this.#entries.set(entry.file, entry)
      return entry
    }
    const routes: RuntimeApiRoute[] = []
    for (const scannedRoute of scanned.routes) {
      const loaded = await resolveModule(scannedRoute.file, scannedRoute.kind === 'task')
      if (!loaded) continue
      const route = served(scannedRoute)
      const task = route.kind === 'task'
      routes.push({ ...route, module: loaded.module as RouteModule, version: task ? loaded.version : undefined })
    }
    const pages: RuntimePage[] = []
    for (const scannedPage of scanned.pages) {
      const loaded = await resolveModule(scannedPage.file)
      if (loaded) pages.push({ ...served(scannedPage), module: loaded.module as PageModule })
    }
    const events = scanned.eventsFile
      ? ((await resolveModule(scanned.eventsFile))?.module as { events?: EventSchemas } | undefined)?.events
      : undefined
    const gone = [...this.#loaded.keys()].filter((file) => !seen.has(file))
    for (const file of gone) this.#loaded.delete(file)
    for (const file of this.#entries.keys()) if (!this.#loaded.has(file)) this.#entries.delete(file)
    forgetAppModules(this.root, gone)
    return { routes, pages, events, reloaded, failed }
  }

  /** Whether `file` (relative to the root) is a route or page this set has loaded. */
  has(file: string): boolean {
    return this.#loaded.has(file)
  }
}
