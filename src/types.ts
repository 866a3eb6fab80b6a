/**
 * The public types of svc: the runtime half's (`src/runtime/types.ts`),
 * which include the manifest entries the scanner produces and the runtime
 * consumes.
 */
export * from './runtime/types.ts'
