/**
 * `svc`: the edge-safe runtime API. Nothing reachable from here imports a
 * `node:` builtin; a test bundles this entry for workerd to keep it so.
 */
import './runtime/node-version.ts'
export type * from './types.ts'
export { HTTP_METHODS, FUNCTION_MEMORY } from './types.ts'
export {
  SvcError,
  ValidationError,
  TaskNotFoundError,
  DuplicateStepKeyError,
  StepMismatchError,
  HttpError,
  StoreFullError,
  PayloadTooLargeError,
  RunNotFoundError,
  RunFinishedError,
  RunCancelledError,
  LeaseLostError,
  StoreUnavailableError,
} from './runtime/errors.ts'
export { CronRunFailedError, type CronSummary } from './runtime/cron.ts'
export { defineSchema } from './runtime/schema.ts'
export { defineTask } from './runtime/tasks/define-task.ts'
export * from './runtime/tasks/index.ts'
export * from './runtime/app/index.ts'
export type { DashboardPage } from './runtime/dashboard/handler.ts'
