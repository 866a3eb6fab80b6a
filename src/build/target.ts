import type { TargetName } from '../self/targets.ts'
import type { ManifestPage, ManifestRoute } from '../types.ts'
import type { BundlePlatform } from './bundle.ts'

export type { TargetName } from '../self/targets.ts'

/** A file the build wrote, for the size report. */
export interface BuiltFile {
  /** Relative to the app root. */
  path: string
  bytes: number
  /** Gzipped size, for bundles. */
  gzipBytes?: number
}

/** What a target's `write` step gets. */
export interface TargetContext {
  root: string
  routes: ManifestRoute[]
  pages: ManifestPage[]
  /** Every distinct cron expression of the scheduled tasks, in route order. */
  crons: string[]
  /** Generated entry source minus the target's own tail (imports and the `app` object). */
  appSource: string
  /** Bundles `source` (an entry module) for this target into `outFile`; `modules` are virtual modules it imports, by id. */
  bundle(source: string, outFile: string, modules?: Record<string, string>): Promise<BuiltFile>
  /** Writes a text file (JSON, Dockerfile, …) and reports it. */
  writeFile(file: string, contents: string): Promise<BuiltFile>
  /** Copies `<root>/public` into `dir`, when it exists; resolves to whether it did. */
  copyPublic(dir: string): Promise<boolean>
}

/**
 * A deployment target: a build-time descriptor plus a runtime entry
 * (`svc/<name>`) that turns the platform's events into requests and cron calls.
 */
export interface TargetDescriptor {
  name: TargetName
  /** Whether hot routes (WebSockets, process-local state) can run there. */
  hot: boolean
  /** Whether a task's `route.timezone` applies to its schedule there; some platforms fire cron in UTC only. */
  cronTimezones: boolean
  platform: BundlePlatform
  /**
   * Set when the target cannot serve the app's public/ folder: where those
   * files should go instead. The build then warns, naming them, rather than
   * dropping them silently.
   */
  staticHost?: string
  /** Output directory, relative to the app root. */
  outDir: string
  write(ctx: TargetContext): Promise<BuiltFile[]>
}
