/**
 * The public types of svc: the runtime half's (`src/runtime/types.ts`) and
 * the manifest entries the scanner produces and the runtime consumes
 * (`src/manifest/types.ts`).
 */
export * from './runtime/types.ts'
export type { Confidence, ManifestPage, ManifestRoute, Provider, ResolvedCompute } from './manifest/types.ts'
