/**
 * Every method of `RunStore`, said to write or only to read: what
 * `svc.store.write.duration` times (telemetry/otel.ts). A table keyed by the
 * interface's own methods, so a method added to `RunStore` does not compile
 * until it is listed here. Edge-safe: no `node:` import.
 */
import type { RunStore } from '../types/run-store.ts'

/** The names of `RunStore`'s methods, optional ones included. */
type StoreMethod = { [K in keyof RunStore]-?: NonNullable<RunStore[K]> extends (...args: never[]) => unknown ? K : never }[keyof RunStore]

export const STORE_OPERATIONS = {
  claimRunning: 'write',
  createRun: 'write',
  createRuns: 'write',
  getRun: 'read',
  updateRun: 'write',
  appendAttempt: 'write',
  saveStep: 'write',
  transactStep: 'write',
  listRuns: 'read',
  pruneFinished: 'write',
  countRunsByTask: 'read',
  saveTimer: 'write',
  takeTimer: 'write',
  listTimers: 'read',
  dropTimersOf: 'write',
  putToken: 'write',
  getToken: 'read',
  settleToken: 'write',
  startQueued: 'write',
  debounceRun: 'write',
  putEvent: 'write',
  eventsSince: 'read',
  listEvents: 'read',
  noteEventEffects: 'write',
  putSchedule: 'write',
  getSchedule: 'read',
  listSchedules: 'read',
  deleteSchedule: 'write',
  putSignal: 'write',
  takeSignal: 'write',
  listSignals: 'read',
  putUpdate: 'write',
  answerUpdate: 'write',
  getUpdate: 'read',
  listUpdates: 'read',
} as const satisfies Record<StoreMethod, 'write' | 'read'>

/** The store methods that write. */
export const STORE_WRITES: ReadonlySet<string> = /* @__PURE__ */ new Set(
  Object.entries(STORE_OPERATIONS)
    .filter(([, kind]) => kind === 'write')
    .map(([name]) => name),
)
