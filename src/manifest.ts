/**
 * `svcjs/manifest`: the build-time half. Scans an app's routes and pages,
 * reads their static config, normalizes it and advises on compute, without
 * importing or evaluating application code. Node-only.
 */
import './runtime/node-version.ts'
export { scanApp, scanFile } from './manifest/scan.ts'
export { adviseRoute, adviseRoutes, type AdvisableRoute } from './manifest/advisor.ts'
export { ConfigError, ManifestError, assertNoConfigErrors, formatConfigError } from './manifest/errors.ts'
export { checkCronExpression } from './manifest/route-config.ts'
export { compareUrlPaths, urlFromFile } from './manifest/paths.ts'
export type {
  RouteAdvice,
  RouteSignal,
  ScanFileOptions,
  ScanFileResult,
  ScanOptions,
  ScanResult,
  ScannedRoute,
  Severity,
  SignalKind,
} from './manifest/types.ts'
/** Scan one file's text without touching the file system (editors, tests). */
export { scanPageSource, scanRouteSource } from './manifest/scan-file.ts'
