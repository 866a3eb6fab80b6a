/**
 * The app's instrumentation file (docs/observability.md "Every target"):
 * `src/instrumentation.ts` (or `.mts`, `.js`, `.mjs`), where the app
 * registers its OpenTelemetry providers. `svc build` imports it first on
 * every target, and `svc dev` before the app's routes.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { SOURCE_LANG } from './parse.ts'

/** The files that may hold it, in the order they are looked for. */
export const INSTRUMENTATION_FILES = Object.keys(SOURCE_LANG).map((ext) => `src/instrumentation${ext}`)

/** The instrumentation file of the app at `root`, from the root, or `undefined` when it has none. */
export function instrumentationFile(root: string): string | undefined {
  return INSTRUMENTATION_FILES.find((file) => existsSync(join(root, file)))
}
