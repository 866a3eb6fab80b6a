/**
 * `svcjs/client`: what a browser page imports to follow a run's progress
 * from the task server (docs/realtime.md). No Node import and no
 * dependency: it runs in browsers, workers and Node alike.
 */
export { RunStreamError, type RunSubscription, type SubscribeRunOptions, subscribeRun } from './client/subscribe-run.ts'
export type { RunChunk, RunProgress, RunStatus, StepKind } from './runtime/types/runs.ts'
