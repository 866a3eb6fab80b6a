/**
 * The kinds of waitpoint (`Waitpoint`) and of step (`StepKind`), each in one
 * table that the engine, the dashboard, the CLI and the docs read. A kind
 * added to `Waitpoint` does not compile until it has its row in
 * `WAITPOINT_KINDS`, and every place that does different work per kind
 * switches over them with `unknownWaitpoint` as its default, so it does not
 * compile either until it handles the new kind. CONTRIBUTING.md "Adding a
 * step kind" lists those places. Edge-safe, and it imports only types: the
 * dashboard's bundle imports it.
 */
import type { StepKind, Waitpoint } from '../../types/runs.ts'

/** What every place that reads a waitpoint kind as data needs of it. */
export interface WaitpointKind {
  /** The kind its step is recorded with once the wait is met (`StepRecord.kind`). */
  step: StepKind
  /** What a met wait of this kind waited on, in a word or two, as the dashboard's timeline labels its step. */
  label: string
}

export const WAITPOINT_KINDS = {
  sleep: { step: 'sleep', label: 'sleep' },
  task: { step: 'waitForTask', label: 'child run' },
  token: { step: 'waitForToken', label: 'token' },
  event: { step: 'waitForEvent', label: 'event' },
  signal: { step: 'waitForSignal', label: 'signal' },
} as const satisfies Record<Waitpoint['type'], WaitpointKind>

/** The kinds of waitpoint, in the order of `WAITPOINT_KINDS`. */
export const WAITPOINT_TYPES = Object.keys(WAITPOINT_KINDS) as Waitpoint['type'][]

/** The step kinds a wait records, one per waitpoint kind. */
export type WaitStepKind = (typeof WAITPOINT_KINDS)[Waitpoint['type']]['step']

/** The step kinds that record no wait: the calls that never suspend a run. */
export const PLAIN_STEP_KINDS = ['run', 'transaction', 'enqueue', 'patch', 'compensation'] as const satisfies readonly StepKind[]

/** Every step kind, the waits' and the others: a `StepKind` in neither list fails to compile below. */
export const STEP_KINDS: readonly StepKind[] = /* @__PURE__ */ (PLAIN_STEP_KINDS as readonly StepKind[]).concat(
  WAITPOINT_TYPES.map((type) => WAITPOINT_KINDS[type].step),
)

// `StepKind` and the two lists must name the same kinds: a step kind that is
// neither a wait's nor a plain one would be recorded with no place to read it.
type Unlisted = Exclude<StepKind, WaitStepKind | (typeof PLAIN_STEP_KINDS)[number]>
const everyStepKindListed: [Unlisted] extends [never] ? true : { unlisted: Unlisted } = true

// The SQL stores index suspended runs by `suspended.waitpoint.name`, the
// event's name (`runs_by_event_wait`, sql/queries.ts and
// postgres/migrations.ts), without looking at the type: a second kind with a
// `name` would land in that index, and be listed as waiting for an event.
// Give it another field name, or add the type to the index's expression.
type Named = Extract<Waitpoint, { name: unknown }>['type']
const onlyEventsHaveNames: [Named] extends ['event'] ? true : { namedKinds: Named } = true
void everyStepKindListed
void onlyEventsHaveNames

/** The waitpoint kind whose met wait records `step`, or `undefined` for a step that waited for nothing. */
export function waitpointTypeOfStep(step: StepKind | undefined): Waitpoint['type'] | undefined {
  return step === undefined ? undefined : WAITED_BY_STEP.get(step)
}

const WAITED_BY_STEP = /* @__PURE__ */ new Map<StepKind, Waitpoint['type']>(
  WAITPOINT_TYPES.map((type) => [WAITPOINT_KINDS[type].step, type]),
)

/**
 * The default of a `switch` over `waitpoint.type` that handles every kind:
 * `waitpoint` is `never` there, so a kind the switch lacks is a type error at
 * the call. Reached at run time only by a record of a later release, whose
 * kind this one does not know.
 */
export function unknownWaitpoint(waitpoint: never): never {
  throw new TypeError(`Unknown waitpoint kind (got ${JSON.stringify(typeOf(waitpoint))}); is this record from a later release of svc?`)
}

/**
 * As `unknownWaitpoint`, for code that shows a waitpoint rather than acts on
 * it (the dashboard, `svc runs show`): a kind it does not know is shown by
 * its type rather than failing the page.
 */
export function unknownWaitpointType(waitpoint: never): string {
  return String(typeOf(waitpoint))
}

function typeOf(waitpoint: unknown): unknown {
  return (waitpoint as { type?: unknown } | null)?.type
}
