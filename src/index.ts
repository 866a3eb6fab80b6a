/**
 * `svcjs`: the edge-safe runtime API. Nothing reachable from here imports a
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
  PatchRemovedError,
  TransactionUnsupportedError,
  RunVersionError,
  HttpError,
  StoreFullError,
  PayloadTooLargeError,
  RunNotFoundError,
  RunFinishedError,
  RunNotSleepingError,
  TooManySignalsError,
  StepNotRecordedError,
  DeadlineExceededError,
  ScheduleNotFoundError,
  TaskNotScheduledError,
  TickSkippedError,
  RunCancelledError,
  LeaseLostError,
  StoreUnavailableError,
} from './runtime/errors.ts'
export {
  UpdateFailedError,
  UpdateNotHandledError,
  TooManyUpdatesError,
  UpdateTimeoutError,
} from './runtime/update-errors.ts'
export { CronRunFailedError, type CronSummary } from './runtime/cron.ts'
export { defineSchema } from './runtime/schema.ts'
export { defineTask } from './runtime/tasks/definitions/define-task.ts'
export { sendEvent, sendEvents } from './runtime/tasks/client/send-event.ts'
export { sendSignal } from './runtime/tasks/client/send-signal.ts'
export { updateRun } from './runtime/tasks/client/update-run.ts'
export { MAX_WAITING_SIGNALS } from './runtime/tasks/store/signal-records.ts'
export { eventNameProblem, MAX_EVENT_NAME_LENGTH, MAX_EVENT_ID_LENGTH } from './runtime/events/rules.ts'
export { MAX_EVENTS_PER_SEND } from './runtime/tasks/engine/event-starts.ts'
export * from './runtime/tasks/index.ts'
export { createSvcHandler, type SvcHandler, type SvcHandlerOptions } from './runtime/handler.ts'
export { createApiApp, type ApiApp } from './runtime/app/create.ts'
export { FRAMEWORK } from './runtime/app/health.ts'
export type { ApiAppOptions, HotPeer, Reply, RouteHandler, WebSocketHandler } from './runtime/app/types.ts'
export type { ResponseClass, SvcRequest } from './runtime/http/types.ts'
export { DEFAULT_BODY_LIMIT } from './runtime/http/body.ts'
export { MemoryCacheStore, DEFAULT_MAX_ENTRIES } from './runtime/pages/cache-store.ts'
export type { CacheEntry, CacheStore, MemoryCacheStoreOptions } from './runtime/pages/cache-store.ts'
export type { SvcCacheConfig, RevalidateResult } from './runtime/pages/isr.ts'
export type { RevalidateWebhook } from './runtime/pages/revalidate.ts'
export type { RunEventsOptions } from './runtime/admin/streams.ts'
export type { EventSchemas } from './runtime/events/schemas.ts'
export { createRunToken, type RunTokenOptions } from './runtime/admin/create-run-token.ts'
export type { DashboardPage } from './runtime/dashboard/route.ts'
export { otelTelemetry, type OtelApi, type OtelTelemetryOptions } from './runtime/telemetry/otel.ts'
export type { ExecutionEnd, ExecutionSpan, RequestSpan, StepSpan, Telemetry } from './runtime/telemetry/types.ts'
export { MAX_RUN_LOGS, MAX_RUN_LOG_BYTES, MAX_LOG_MESSAGE_LENGTH, MAX_LOG_ATTRIBUTES_BYTES } from './runtime/tasks/steps/run-logs.ts'
export type { EnvLike } from './runtime/env.ts'
