/**
 * What the runtime tells its telemetry (docs/observability.md): a small
 * interface, so the core imports no tracing library. `otelTelemetry`
 * (otel.ts) implements it on the OpenTelemetry API; without telemetry
 * nothing is called. Edge-safe.
 */
import type { RunLogEntry, RunRecord, RunStatus, RunTrace, StepKind, Waitpoint } from '../types.ts'
import type { RunStore } from '../types/run-store.ts'
import { describe } from '../describe.ts'

/** How an execution of a handler ended, as its span records it. */
export type ExecutionEnd =
  | { kind: 'completed' }
  | { kind: 'failed'; error: string }
  | { kind: 'suspended'; stepKey: string; waitpoint: Waitpoint }
  | { kind: 'stopped'; why: string }

/** One step that executes, in its attempt's span. */
export interface StepSpan {
  /** Calls `fn` with the step's span as the active one, so spans the step's function makes are its children. */
  run<T>(fn: () => T): T
  end(error?: unknown): void
}

/** One execution of a run's handler: an attempt, or its replay after a resume. */
export interface ExecutionSpan {
  /** Calls `fn` with the execution's span as the active one. */
  run<T>(fn: () => T): T
  /** A step executes now. */
  step(key: string, kind: StepKind): StepSpan
  /** A step was met in the run's record and not executed again. */
  replayed(key: string, kind: StepKind | undefined): void
  /** The trace context a child run started by this execution continues. */
  trace(): RunTrace | undefined
  end(end: ExecutionEnd): void
}

/** The span of one HTTP request the app serves. */
export interface RequestSpan {
  /** The route pattern that matched, as `http.route`. */
  route(pattern: string): void
  /** The span's trace context, which a run the request starts continues. */
  trace(): RunTrace | undefined
}

export interface Telemetry {
  /** Serves one request under a server span; `serve` is called with it, as the active span (with none when nothing traces). */
  request(request: Request, serve: (span: RequestSpan | undefined) => Response | Promise<Response>): Response | Promise<Response>
  /** A run of `taskName` is being created: the trace it keeps, a child of `parent` or of the active span; none when nothing traces. */
  runCreated(run: Pick<RunRecord, 'id' | 'taskName' | 'trigger'>, parent: RunTrace | undefined): RunTrace | undefined
  /** An execution of `run`'s handler, attempt `attempt`, begins; `first` when it is the run's first. `undefined` when nothing traces or measures it. */
  execution(run: RunRecord, attempt: number, first: boolean): ExecutionSpan | undefined
  /** A run finished here. */
  runFinished(run: Pick<RunRecord, 'taskName' | 'status'>): void
  /** A run logged an entry (`ctx.log`). */
  log(taskName: string, runId: string, entry: RunLogEntry): void
  /** `store` with its writes timed; the store itself when nothing measures them. */
  store(store: RunStore): RunStore
  /** Reports the runs queued and running, by task, whenever the metrics are read, until the function it returns is called. */
  observeRuns(count: (status: RunStatus) => Promise<{ taskName: string; count: number }[]>): () => void
}

/** Why `value` is not a `telemetry` option (absent is one), or `null`. */
export function telemetryOptionProblem(value: unknown): string | null {
  if (value === undefined) return null
  if (value !== null && typeof value === 'object' && typeof (value as Telemetry).request === 'function') return null
  return `telemetry must be a Telemetry, such as otelTelemetry(api) returns (got ${describe(value)})`
}
