/**
 * `ctx.log.info|warn|error(message, attributes?)`: the entries a run logs
 * (docs/observability.md "Logs kept with each run"). They are kept in the
 * run's record (`RunRecord.logs`), so every store keeps them as it keeps
 * the record and `GET /__tasks/runs/<id>/logs` reads them; the log is
 * bounded (`MAX_RUN_LOGS`, `MAX_RUN_LOG_BYTES`), dropping the oldest and
 * counting them (`dropped`).
 *
 * They are written with the run's data chunks by the execution's
 * `RunOutputWriter` (`run-output.ts`), which also skips on a replay the
 * calls the run has recorded. Logging never fails the handler for what it
 * logs: a message too long is cut, and attributes JSON cannot hold, or too
 * large, are replaced by a note saying so. Edge-safe.
 */
import type { Logger, RunLogEntry, RunLogLevel, RunLogs } from '../../types.ts'
import type { Telemetry } from '../../telemetry/types.ts'
import { describe } from '../../describe.ts'
import { appendBounded } from '../base/bounded-log.ts'
import { checkJson, utf8Length } from '../base/json.ts'
import { groupDigits } from '../store/payload-limit.ts'

/** Most entries a run keeps. */
export const MAX_RUN_LOGS = 500
/** Most bytes of UTF-8 JSON a run's kept entries take together. */
export const MAX_RUN_LOG_BYTES = 128 * 1024
/** Longest message kept, in characters; a longer one is cut, ending in '…'. */
export const MAX_LOG_MESSAGE_LENGTH = 4096
/** Most bytes of UTF-8 JSON an entry's attributes take. */
export const MAX_LOG_ATTRIBUTES_BYTES = 8 * 1024

/** What an entry says, before the writer numbers and places it. */
export type LogLine = Pick<RunLogEntry, 'level' | 'message' | 'attributes'>

/**
 * The entry `ctx.log[level](message, attributes)` keeps. A message that is
 * not a string is described; attributes that are not a plain object of JSON
 * values, or too large, are replaced by `{ svc.dropped: why }`.
 */
export function logLine(level: RunLogLevel, message: unknown, attributes: unknown): LogLine {
  let text = typeof message === 'string' ? message : message instanceof Error ? message.message : describe(message)
  if (text.length > MAX_LOG_MESSAGE_LENGTH) text = `${text.slice(0, MAX_LOG_MESSAGE_LENGTH - 1)}…`
  if (attributes === undefined) return { level, message: text }
  return { level, message: text, attributes: keptAttributes(attributes) }
}

function keptAttributes(attributes: unknown): Record<string, unknown> {
  if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) {
    return { 'svc.dropped': `attributes must be an object (got ${describe(attributes)})` }
  }
  const fault = checkJson(attributes, MAX_LOG_ATTRIBUTES_BYTES)
  if (fault?.problem !== undefined) return { 'svc.dropped': `attributes cannot be kept as JSON: ${fault.problem}` }
  if (fault !== undefined) {
    return {
      'svc.dropped': `attributes are ${groupDigits(fault.bytes)} bytes of JSON, over the ${groupDigits(MAX_LOG_ATTRIBUTES_BYTES)}-byte limit`,
    }
  }
  return JSON.parse(JSON.stringify(attributes)) as Record<string, unknown>
}

/**
 * `log` with `entry` added last and the oldest entries dropped (and counted)
 * to keep the bounds; `calls` when the entry was a counted call. A new log,
 * frozen as its entries, as `withChunk` makes one.
 */
export function withLogEntry(log: RunLogs | undefined, entry: RunLogEntry, calls?: number): RunLogs {
  const next = appendBounded(log?.kept, log?.bytes ?? 0, entry, entryBytes(entry), LOG_BOUNDS, entryBytes)
  return Object.freeze({
    kept: next.kept,
    bytes: next.bytes,
    calls: calls ?? log?.calls ?? 0,
    dropped: (log?.dropped ?? 0) + next.dropped,
  })
}

const LOG_BOUNDS = { count: MAX_RUN_LOGS, bytes: MAX_RUN_LOG_BYTES }

function entryBytes(entry: RunLogEntry): number {
  return utf8Length(JSON.stringify(entry))
}

/** `entry` as one line of text: `LEVEL [task run attempt N step key] message {attributes}`, as `svc dev` prints it. */
export function logEntryText(taskName: string, runId: string, entry: RunLogEntry): string {
  const step = entry.step === undefined ? '' : ` step ${entry.step}`
  const attributes = entry.attributes === undefined ? '' : ` ${JSON.stringify(entry.attributes)}`
  return `[${taskName} ${runId} attempt ${entry.attempt}${step}] ${entry.message}${attributes}`
}

/**
 * Where each entry a run keeps goes besides its record: printed to `logger`
 * (`printRunLogs`, as `svc dev` does) and handed to telemetry as a log
 * record. `undefined` when it goes nowhere else.
 */
export function runLogSink(
  logger: Logger,
  print: boolean,
  telemetry: Telemetry | undefined,
): ((taskName: string, runId: string, entry: RunLogEntry) => void) | undefined {
  if (!print && telemetry === undefined) return undefined
  return (taskName, runId, entry) => {
    if (print) logger[entry.level](logEntryText(taskName, runId, entry))
    telemetry?.log(taskName, runId, entry)
  }
}
