// Public exports of the task runtime.
export { createTaskRuntime } from './public-runtime.ts'
export { cronerClock } from './schedule/croner-clock.ts'
export type { CronClock, CronJob, CronTicks } from './definitions/cron-clock.ts'
export type { TaskRuntimeInstance, TaskRuntimeOptions } from './runtime.ts'
export type { TaskDefinition } from './definitions/definitions.ts'
export type { ScheduledJob } from './schedule/scheduler.ts'
export { MemoryRunStore, DEFAULT_MAX_BYTES } from './store/memory-store.ts'
export { DEFAULT_MAX_RUNS } from './store/store-limits.ts'
export type { MemoryRunStoreOptions } from './store/memory-store.ts'
export type {
  RunStore,
  RunPatch,
  RunQuery,
  SharedWork,
  StartedRuns,
  TaskRunCount,
  TimerRecord,
  TimerKind,
  TokenRecord,
  TokenStatus,
  EventRecord,
  LiveVersions,
} from './store/store.ts'
export { type VersionPolicy, MAX_VERSION_LENGTH } from './definitions/versions.ts'
export type { EventEffects, EventListQuery } from '../types/run-store.ts'
export type { FlowLimits } from './flow/flow.ts'
export { DEFAULT_MAX_PAYLOAD_BYTES } from './store/payload-limit.ts'
export { enqueue, enqueueMany, completeToken, cancelRun, runScheduledTasks } from './client/enqueue.ts'
export { MAX_BATCH_ITEMS } from './flow/batch.ts'
export { setActiveTaskRuntime, getActiveTaskRuntime } from './client/active.ts'
export { ENQUEUE_HEADERS, enqueueOptionsFromHeaders, taskServerUrl } from './client/client.ts'
export { MAX_DELAY_SECONDS, MAX_IDEMPOTENCY_KEY_LENGTH } from './definitions/options.ts'
export { isSuspension } from './steps/suspend.ts'
export { tokenIdFor } from './base/ids.ts'
export { backoffDelay } from './base/backoff.ts'
