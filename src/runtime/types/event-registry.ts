/**
 * Typed events: the registry that `.svc/types.d.ts` fills in from the
 * app's `src/events.ts`, and the types that read event names and data
 * from it (docs/events.md "Typed events").
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { NameArg, RegisteredName, RegistryField } from './task-registry.ts'

/**
 * Event name → `{ data, received }`: what a send takes (the input type of
 * the name's schema) and what a wait or a started run gets (its output
 * type). Filled in by the `.svc/types.d.ts` that `svc types` (and
 * `svc dev`, `svc build`) writes, through declaration merging. While it is
 * empty, event names are `string` and data `unknown`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging
export interface EventRegistry {}

/** The declared event names; `string` while the registry is empty. */
export type EventName = RegisteredName<EventRegistry>

/** An event name argument: a declared name, or one in a plain `string`, which takes `unknown` data. */
export type EventNameArg<N extends string> = NameArg<N, EventName>

/** What a send of event `N` takes as data: the input type of its schema; `unknown` for undeclared names. */
export type EventData<N extends string> = RegistryField<EventRegistry, N, 'data'>

/** The data a wait for event `N`, or a run it starts, receives: the output type of its schema; `unknown` for undeclared names. */
export type ReceivedEventData<N extends string> = RegistryField<EventRegistry, N, 'received'>

/** `data, options` after an event name: the data may be left out only when the name's schema accepts `undefined`. */
export type EventDataArgs<N extends string, Options> =
  undefined extends EventData<N> ? [data?: EventData<N>, options?: Options] : [data: EventData<N>, options?: Options]

/**
 * One event of a `sendEvents` list: for a declared name, its data must
 * fit the name's schema.
 */
export type TypedEventInput = [keyof EventRegistry] extends [never]
  ? { name: string; data?: unknown; id?: string }
  : {
      [N in EventName]: { name: N; id?: string } & (undefined extends EventData<N> ? { data?: EventData<N> } : { data: EventData<N> })
    }[EventName]

/**
 * The input type of the schema of event `N` in an events module `M`
 * (`typeof import('./src/events.ts')`).
 */
export type EventModuleData<M, N extends string> =
  EventModuleSchema<M, N> extends infer Schema extends StandardSchemaV1 ? StandardSchemaV1.InferInput<Schema> : unknown

/** The output type of the schema of event `N` in an events module `M`. */
export type EventModuleReceived<M, N extends string> =
  EventModuleSchema<M, N> extends infer Schema extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<Schema> : unknown

// The schema of event `N` in an events module `M`, or `unknown`.
type EventModuleSchema<M, N extends string> = M extends { events: infer Events } ? (N extends keyof Events ? Events[N] : unknown) : unknown
