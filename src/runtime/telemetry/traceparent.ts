/**
 * W3C Trace Context `traceparent` values (https://www.w3.org/TR/trace-context/#traceparent-header):
 * how a run keeps the context its trace continues (`RunRecord.trace`), and
 * how a caller hands one over. Edge-safe.
 */
import type { SpanContext } from '@opentelemetry/api'

// version "00", a 32-hex trace id, a 16-hex parent id, 2-hex flags; an id of only zeros is invalid.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The span context `value` names, or `undefined` for a value that is not a valid version-00 `traceparent`. */
export function parseTraceparent(value: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(value)
  if (match === null) return undefined
  const [, traceId, spanId, flags] = match
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true }
}

/** The `traceparent` of `context`. */
export function formatTraceparent(context: Pick<SpanContext, 'traceId' | 'spanId' | 'traceFlags'>): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}
