// Public exports of the task runtime.
export { createTaskRuntime } from './public-runtime.ts'
export { cronerClock } from './croner-clock.ts'
export type { CronClock, CronJob, CronTicks } from './cron-clock.ts'
export type { TaskRuntimeInstance, TaskRuntimeOptions } from './runtime.ts'
export type { TaskDefinition } from './definitions.ts'
export type { ScheduledJob } from './scheduler.ts'
export { MemoryRunStore, DEFAULT_MAX_BYTES } from './memory-store.ts'
export { DEFAULT_MAX_RUNS } from './store-limits.ts'
export type { MemoryRunStoreOptions } from './memory-store.ts'
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
} from './store.ts'
export { type VersionPolicy, MAX_VERSION_LENGTH } from './versions.ts'
export type { EventEffects, EventListQuery } from '../types/run-store.ts'
export type { FlowLimits } from './flow.ts'
export { DEFAULT_MAX_PAYLOAD_BYTES } from './payload-limit.ts'
export { enqueue, enqueueMany, completeToken, cancelRun, runScheduledTasks } from './enqueue.ts'
export { MAX_BATCH_ITEMS } from './batch.ts'
export { setActiveTaskRuntime, getActiveTaskRuntime } from './active.ts'
export { ENQUEUE_HEADERS, enqueueOptionsFromHeaders, taskServerUrl } from './client.ts'
export { MAX_DELAY_SECONDS, MAX_IDEMPOTENCY_KEY_LENGTH } from './options.ts'
export { isSuspension } from './suspend.ts'
export { tokenIdFor } from './ids.ts'
export { backoffDelay } from './backoff.ts'
