/**
 * Log records of `ctx.log` entries (docs/observability.md). They go through
 * the Logs API: `logs` of `@opentelemetry/api` from 1.10 on (the SDK 3.x
 * line), else `@opentelemetry/api-logs` (the SDK 2.x line, on API 1.9),
 * given or imported. Edge-safe.
 */
import type { Attributes, AttributeValue, Context } from '@opentelemetry/api'
import type { RunLogEntry } from '../types.ts'
import { importOptional, OTEL_API_LOGS } from './optional-import.ts'

/**
 * A log record, as both Logs APIs take it. Loosely typed, so that either
 * API's logger fits: their `AnyValue` bodies and attributes hold more than
 * svc writes.
 */
export interface LogRecordLike {
  timestamp?: unknown
  severityNumber?: number
  severityText?: string
  body?: unknown
  attributes?: Record<string, unknown>
  context?: unknown
}

/** The part of a Logs API's `logs` svc uses: `api.logs` from `@opentelemetry/api` 1.10, or `logs` from `@opentelemetry/api-logs`. */
export interface LogsApiLike {
  getLogger(name: string): { emit(record: LogRecordLike): void }
}

/** `@opentelemetry/api-logs`, as `import * as logsApi from '@opentelemetry/api-logs'` gives it. */
export interface LogsModuleLike {
  logs: LogsApiLike
}

type Emit = (record: LogRecordLike) => void

/**
 * How the records of `scope` are emitted: through `api.logs` when the API
 * has it, else through `logsApi`, else through `@opentelemetry/api-logs`
 * imported at the first record (records wait for the import, in order).
 * With none of them, records go nowhere.
 */
export function logEmitter(scope: string, apiLogs: LogsApiLike | undefined, logsApi: LogsModuleLike | undefined): Emit {
  const logs = apiLogs ?? logsApi?.logs
  if (logs !== undefined) {
    const logger = logs.getLogger(scope)
    return (record) => logger.emit(record)
  }
  let emit: Emit | undefined
  let loading: Promise<void> | undefined
  return (record) => {
    if (emit !== undefined) return emit(record)
    loading ??= importOptional<Partial<LogsModuleLike>>(OTEL_API_LOGS).then((module) => {
      const logger = module?.logs?.getLogger(scope)
      emit = logger === undefined ? () => {} : (next) => logger.emit(next)
    })
    loading.then(() => emit?.(record))
  }
}

// The severity numbers of the OpenTelemetry logs data model
// (https://opentelemetry.io/docs/specs/otel/logs/data-model/#field-severitynumber),
// which both Logs APIs' `SeverityNumber` enums hold.
const SEVERITY: Record<RunLogEntry['level'], number> = { info: 9, warn: 13, error: 17 }

/** `entry` as a log record in `context`: the trace of the run that logged it, when there is one. */
export function logRecord(taskName: string, runId: string, entry: RunLogEntry, context: Context): LogRecordLike {
  const attributes: Attributes = {
    'svc.task.name': taskName,
    'svc.run.id': runId,
    'svc.run.attempt': entry.attempt,
    'svc.log.seq': entry.seq,
  }
  if (entry.step !== undefined) attributes['svc.step.key'] = entry.step
  for (const [key, value] of Object.entries(entry.attributes ?? {})) {
    attributes[key] = value !== null && typeof value === 'object' ? JSON.stringify(value) : (value as AttributeValue)
  }
  return {
    timestamp: Date.parse(entry.at),
    severityNumber: SEVERITY[entry.level],
    severityText: entry.level.toUpperCase(),
    body: entry.message,
    attributes,
    context,
  }
}
