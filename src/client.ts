/**
 * `svcjs/client`: what a browser page imports to follow a run's progress
 * from the task server, and send the run signals (docs/realtime.md). No
 * Node import and no dependency: it runs in browsers, workers and Node
 * alike.
 */
export { RunSignalError, type SendRunSignalOptions, sendRunSignal } from './client/send-run-signal.ts'
export { RunStreamError, type RunSubscription, type SubscribeRunOptions, subscribeRun } from './client/subscribe-run.ts'
export type { RunChunk, RunProgress, RunStatus, StepKind } from './runtime/types/runs.ts'
export type { SentSignal } from './runtime/types/signals.ts'
