/**
 * Route and page files once loaded: their modules' exports, and a route or
 * page as the runtime serves it, a manifest entry plus its module.
 */
import type { ManifestPage, ManifestRoute } from './manifest.ts'
import type { PageMode, RouteConfig, RouteKind } from './routes.ts'
import type { SchemaDefinition, SchemaLike } from './schema.ts'

/**
 * A function an app module exports: the runtime calls it with arguments of
 * its own (a request, a reply, a peer), and app code declares them with
 * whatever types it likes, so the export is typed as loosely as a module's.
 */
// biome-ignore lint/suspicious/noExplicitAny: app modules type their own parameters
export type ModuleFunction = (...args: any[]) => unknown

/** A route file's exports, once loaded. */
export interface RouteModule {
  route?: RouteConfig
  kind?: RouteKind
  schedule?: string
  on?: string | string[]
  input?: SchemaLike
  schema?: SchemaDefinition
  websocket?: ModuleFunction
  GET?: ModuleFunction
  POST?: ModuleFunction
  PUT?: ModuleFunction
  DELETE?: ModuleFunction
  PATCH?: ModuleFunction
  HEAD?: ModuleFunction
  OPTIONS?: ModuleFunction
  [exportName: string]: unknown
}

/**
 * A manifest entry plus its loaded module exports. Only `path` and `module`
 * are required: fields left out are read from the module's `route`/`kind`
 * exports at runtime, so routes can be written by hand.
 */
export interface RuntimeApiRoute extends Partial<ManifestRoute> {
  path: string
  module: RouteModule
  /**
   * Task routes: the version of the task's code, which each run records
   * (`RunRecord.version`); `svc build` and `svc dev` set it to a digest of
   * the task's module. `SVC_VERSION` (or the runtime's `version`) wins.
   */
  version?: string
}

/** A page module: the default export renders. */
export interface PageModule {
  default: ModuleFunction
  page?: { mode?: PageMode; revalidate?: number; tags?: string[] }
  [exportName: string]: unknown
}

/** A manifest page plus its loaded module. */
export interface RuntimePage extends Partial<ManifestPage> {
  path: string
  module: PageModule
}
