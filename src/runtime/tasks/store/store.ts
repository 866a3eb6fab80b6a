/**
 * The run store: where runs, attempts, steps, waitpoints, timers, tokens and
 * idempotency keys live. The engine only talks to this interface, so a
 * durable implementation (SQLite, a platform broker) replaces the memory one
 * without touching it.
 *
 * Every record is plain, JSON-serializable data, with two caveats that are
 * the application's responsibility: a run's `input` and `result`, and step
 * outputs, are whatever the task received and returned.
 *
 * Methods that change state under a condition (`createRun` with an
 * idempotency key, `updateRun` with `expect`, `takeTimer`, `settleToken`,
 * `putToken`) are the
 * compare-and-set points: a durable store implements each atomically, so two
 * processes that race for the same transition cannot both win.
 */
import type { RunPatch, TokenRecord } from '../../types/run-store.ts'
import type { Attempt, RunRecord, RunStatus } from '../../types/runs.ts'
import { StoreFullError } from '../../errors.ts'
import { sameJson } from '../../same-json.ts'

export type {
  RunPatch,
  RunQuery,
  TaskRunCount,
  TimerKind,
  TimerRecord,
  TokenStatus,
  TokenRecord,
  RunStore,
  StartedRuns,
  SharedWork,
  EventRecord,
  LiveVersions,
} from '../../types/run-store.ts'

/**
 * How long a store holds an event after its `time`: the window in which an
 * id sent again is the same event, and the longest `lookbackSeconds` of
 * `ctx.step.waitForEvent`.
 */
export const EVENT_RETENTION_MS = 24 * 60 * 60 * 1000
/** Most expired events one `putEvent` removes, so a send never pays for a large backlog at once. */
export const EVENT_PRUNE_BATCH = 100

/** Statuses in which a run is over; it never changes status again. */
export const FINISHED_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'compensation_failed']

/** Statuses in which a run is live: it may still run, and is never evicted. */
export const LIVE_STATUSES: readonly RunStatus[] = ['scheduled', 'queued', 'running', 'suspended']

/**
 * `createRuns` for a store whose writes are synchronous inside one
 * transaction: `insert` for each run, a `StoreFullError` (thrown before the
 * run wrote anything) in the place of a run past the bound.
 */
export function insertEach<T>(runs: readonly RunRecord[], insert: (run: RunRecord) => T): (T | StoreFullError)[] {
  return runs.map((run) => {
    try {
      return insert(run)
    } catch (error) {
      if (error instanceof StoreFullError) return error
      throw error
    }
  })
}

/** Whether a run in this status is over. */
export function isFinished(status: RunStatus): boolean {
  return FINISHED_STATUSES.includes(status)
}

/** Whether a run has recorded any step, without listing its keys. */
export function hasSteps(run: Pick<RunRecord, 'steps'>): boolean {
  for (const _ in run.steps) return true
  return false
}

const NO_STEPS = Object.freeze({})

/**
 * `run` as a durable store's row of it holds it: every field but its steps,
 * which the SQL stores keep as rows of their own (`"steps": {}` in place).
 * `run` itself when it has none.
 */
export function withoutSteps(run: RunRecord): RunRecord {
  return hasSteps(run) ? { ...run, steps: NO_STEPS } : run
}

/** Whether `status` is the expected status, or one of them (the `expect` of `updateRun`). */
export function statusMatches(status: RunStatus, expected: RunStatus | readonly RunStatus[]): boolean {
  return typeof expected === 'string' ? status === expected : expected.includes(status)
}

/** Whether `run` is suspended on an event named `name` (`RunQuery.waitingForEvent`). */
export function waitsForEvent(run: Pick<RunRecord, 'status' | 'suspended'>, name: string): boolean {
  const waitpoint = run.status === 'suspended' ? run.suspended?.waitpoint : undefined
  return waitpoint?.type === 'event' && waitpoint.name === name
}

/** Settles a waiting token in place, as `settleToken` does: its status, when (`at`, ISO 8601), and a completion's payload. */
export function settleTokenRecord(token: TokenRecord, status: 'completed' | 'timed_out', payload: unknown, at: string): void {
  token.status = status
  token.settledAt = at
  if (status === 'completed' && payload !== undefined) token.payload = payload
}

/**
 * Applies a `RunPatch` in place: a key present with `undefined` removes the
 * field, and `attempt` is appended to `attempts` (as given: a store that
 * keeps the record copies it first).
 */
export function applyRunPatch(run: Omit<RunRecord, 'steps'>, patch: RunPatch): void {
  const target = run as unknown as Record<string, unknown>
  for (const key in patch) {
    const value = (patch as Record<string, unknown>)[key]
    if (key === 'attempt') {
      if (value !== undefined) run.attempts.push(value as Attempt)
    } else if (value === undefined) delete target[key]
    else target[key] = value
  }
}

/**
 * Whether `run` shows `patch` as applied: each field as the patch sets it
 * (or gone, for a field it removes), and its attempt as the last one. A
 * store whose connection dropped as a compare-and-set committed cannot
 * tell from sending it again (its own write now fails the condition), so
 * it reads the run back and asks this. The patches that end or suspend an
 * attempt carry a time of their own (`finishedAt`, `suspended.since`, the
 * attempt's `startedAt`), so another write does not pass for one of them.
 */
export function showsPatch(run: RunRecord, patch: RunPatch): boolean {
  const fields = run as unknown as Record<string, unknown>
  for (const key in patch) {
    const value = (patch as Record<string, unknown>)[key]
    if (key === 'attempt') {
      if (value !== undefined && !sameJson(run.attempts.at(-1), asStored(value))) return false
    } else if (value === undefined ? key in fields : !sameJson(fields[key], asStored(value))) return false
  }
  return true
}

/** `value` as a JSON store hands it back: fields holding `undefined` gone. */
function asStored(value: unknown): unknown {
  return value !== null && typeof value === 'object' ? JSON.parse(JSON.stringify(value)) : value
}
