/**
 * Types of the edge-safe runtime half, one file per topic under `types/`:
 * what route and page files declare and export, schemas, runs, the task
 * context and its steps, typed tasks, the task runtime, the HTTP surface's
 * host types, the logger, and the manifest entries the scanner produces for
 * the runtime.
 */
export type * from './types/events.ts'
export type * from './types/event-registry.ts'
export type * from './types/http.ts'
export type * from './types/logger.ts'
export type * from './types/manifest.ts'
export type * from './types/modules.ts'
export type * from './types/routes.ts'
export type * from './types/runs.ts'
export type * from './types/schema.ts'
export type * from './types/schedules.ts'
export type * from './types/signals.ts'
export type * from './types/updates.ts'
export type * from './types/task-context.ts'
export type * from './types/task-registry.ts'
export type * from './types/task-runtime.ts'
// The values of two of the types above, so that one import names a type and its values.
export { FUNCTION_MEMORY } from './function-memory.ts'
export { HTTP_METHODS } from './http-methods.ts'
