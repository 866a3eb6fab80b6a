/**
 * The manifest's entries as the runtime consumes them: the scanner
 * (`src/manifest`) produces them, and a loaded route or page is one of them
 * plus its module. They live here, in the lowest layer, so that the runtime
 * never imports the build-time half.
 */
import type { TaskFlow } from './flow.ts'
import type { ComputeClass, HttpMethod, PageMode, RouteKind } from './routes.ts'

/** The effective compute contract of a route, as the manifest reports it. */
export interface ResolvedCompute {
  class: ComputeClass
  memory: string | null
  cpu: number | null
  /**
   * Legacy sizing shape carried by dedicated routes during the compatibility
   * window (`'2gb'` is `memoryMb: 2048`). Absent for `function` routes.
   */
  machine?: { memoryMb: number | null; cpus: number | null }
}

/** Where the advisor says a route should run. */
export type Provider = 'function-platform' | 'persistent-host' | 'edge-worker'

export type Confidence = 'high' | 'medium' | 'low'

/** One API route as the scanner reports it (`svc routes inspect --json`). */
export interface ManifestRoute {
  /** URL pattern, such as `/api/users/:id`. */
  path: string
  /** Source file, relative to the app root, with `/` separators. */
  file: string
  kind: RouteKind
  /** Dot-form task name (`jobs.notify`); null for routes that are not tasks. */
  name: string | null
  methods: HttpMethod[]
  websocket: boolean
  schedule: string | null
  timezone: string | null
  /** Tasks only: the events that start a run (`on`), as a list; null when none. */
  on: string[] | null
  /** Tasks only; null otherwise. */
  retries: number | null
  /** Tasks only, in milliseconds; null otherwise. */
  timeout: number | null
  /** Tasks only: `route.concurrency`, `route.rateLimit` and `route.debounce`, resolved (each absent when unset); null otherwise. */
  flow: TaskFlow | null
  /** Normalized origins (`https://example.com`); null when unset. */
  origins: string[] | null
  /** Whether the file exports `input` (tasks). */
  hasInput: boolean
  /** Whether the file exports `schema`. */
  hasSchema: boolean
  compute: ResolvedCompute
  provider: Provider
  confidence: Confidence
  reasons: string[]
  warnings: string[]
}

/** One page as the scanner reports it. */
export interface ManifestPage {
  path: string
  file: string
  /** @default 'server' */
  mode: PageMode
  /** Hybrid pages: seconds an entry stays fresh. */
  revalidate: number | null
  tags: string[]
}
