/**
 * Types of the build-time half: what the scanner reports, static signals and
 * advice. The manifest's routes and pages are the runtime's to define, since
 * the runtime consumes them (`src/runtime/types/manifest.ts`); they are
 * re-exported here for the scanner's modules.
 */
import type { ManifestPage, ManifestRoute, ResolvedCompute, Provider, Confidence } from '../runtime/types/manifest.ts'
import type { FunctionMemory, RouteKind } from '../runtime/types/routes.ts'
import type { ConfigError } from './errors.ts'
import type { ManifestEvents } from './events-file.ts'

export type { Confidence, ManifestPage, ManifestRoute, Provider, ResolvedCompute }

/** What a route's source shows about where it can run, read from its syntax tree. */
export type SignalKind =
  | 'websocket'
  | 'listening-socket'
  | 'module-timer'
  | 'background-loop'
  | 'mutable-state'
  | 'heavy-module'
  | 'native-module'
  | 'node-builtin'

export interface RouteSignal {
  kind: SignalKind
  /** A sentence for `reasons`, naming the evidence and its line. */
  message: string
  line: number
  column: number
  /** Import signals: the module specifier. */
  module?: string
  /** Heavy modules: the least function memory to recommend. */
  memory?: FunctionMemory
}

/** A manifest route as the scanner returns it: the manifest entry plus the signals behind its advice. */
export interface ScannedRoute extends ManifestRoute {
  /** Evidence read from the source, with positions. */
  signals: RouteSignal[]
  /** Module specifiers the file loads at runtime (static, dynamic and `require`), type-only imports excluded. */
  imports: string[]
}

export interface ScanOptions {
  /** The app directory; routes are read from `<root>/src/api`, pages from `<root>/src/pages`. */
  root: string
  /**
   * Reuse the results of files whose text has not changed since the last
   * scan, kept in `<root>/.svc/scan-cache.json`. Results are the same with
   * or without it; a cache that cannot be read or written is ignored.
   * @default true when the environment has `SVC_SCAN_CACHE=1` (the `svc` CLI sets it unless it is `0`), else false
   */
  cache?: boolean
  /**
   * What identifies the scanner's code in the cache; results cached under
   * another fingerprint are not used. Meant for tests.
   * @default the svc and parser versions, and the size and modification time of the scanner's modules
   */
  cacheFingerprint?: string
}

export interface ScanResult {
  /** The absolute app directory that was scanned. */
  root: string
  /** API routes, sorted by path (static segments before parameters). */
  routes: ScannedRoute[]
  /** Pages, sorted by path. */
  pages: ManifestPage[]
  /** Every config error in every file, sorted by file and position. Empty when the app is valid. */
  errors: ConfigError[]
  /** The app's event schemas (`src/events.ts`), when it declares them and they scan clean. */
  events?: ManifestEvents
}

export interface ScanFileOptions {
  /** The app directory. */
  root: string
  /** The file to check: absolute, or relative to `root` (`src/api/report.ts`). */
  file: string
  /** The file's current text; read from disk when left out. */
  source?: string
}

/**
 * One file's result. `route` is set for files under `src/api`, `page` for
 * files under `src/pages`; both are null for files the scanner does not
 * treat as routes (helpers, tests, declaration files, other folders).
 * Rules that span files (duplicate paths and task names) need `scanApp`.
 */
export interface ScanFileResult {
  route: ScannedRoute | null
  page: ManifestPage | null
  errors: ConfigError[]
}

export type Severity = 'info' | 'warn'

/** One entry of `svc runtime advise --json`. */
export interface RouteAdvice {
  path: string
  file: string
  kind: RouteKind
  /** The compute contract the route declares (or gets by default). */
  current: ResolvedCompute
  /** The compute contract the evidence calls for. */
  recommended: ResolvedCompute
  provider: Provider
  confidence: Confidence
  /** `warn` when the declared config contradicts what the source shows. */
  severity: Severity
  reasons: string[]
  /** The concrete change to make, when there is one. */
  recommendation?: string
  /** A command to run next. */
  nextCommand?: string
}
