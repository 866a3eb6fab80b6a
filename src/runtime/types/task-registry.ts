/**
 * Typed tasks: the registry that `.svc/types.d.ts` fills in, and the types
 * that read task names, payloads and results from it.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'

/**
 * Task name → `{ input, result }`, filled in by the `.svc/types.d.ts` that
 * `svc types` (and `svc dev`, `svc build`) writes, through declaration
 * merging (`declare module 'svcjs' { interface TaskRegistry { … } }`). While it
 * is empty, task names are `string` and payloads and results `unknown`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging
export interface TaskRegistry {}

/** The names a registry (`TaskRegistry`, `EventRegistry`) holds; `string` while it is empty. */
export type RegisteredName<Registry> = [keyof Registry] extends [never] ? string : Extract<keyof Registry, string>

/**
 * A name argument of a registry's names `Names`: a registered name, or a
 * name held in a plain `string` (read from a request, say), which cannot be
 * checked before it runs.
 */
export type NameArg<N extends string, Names extends string> = string extends N ? N : N extends Names ? N : Names

/** Field `Field` of name `N`'s entry in `Registry`; `unknown` for unregistered names. */
export type RegistryField<Registry, N extends string, Field extends string> = N extends keyof Registry
  ? Registry[N] extends { [K in Field]: infer Value }
    ? Value
    : unknown
  : unknown

/** The registered task names; `string` while the registry is empty. */
export type TaskName = RegisteredName<TaskRegistry>

/** A task name argument: a registered name, or one in a plain `string`, which takes an `unknown` payload. */
export type TaskNameArg<N extends string> = NameArg<N, TaskName>

/** What a payload for task `N` must be: the input type of its `input` schema; `unknown` for unregistered names. */
export type TaskInput<N extends string> = RegistryField<TaskRegistry, N, 'input'>

/** The awaited return of task `N`'s handler; `unknown` for unregistered names. */
export type TaskResult<N extends string> = RegistryField<TaskRegistry, N, 'result'>

/** `payload, opts` after a task name: the payload may be left out only when the task's input accepts `undefined`. */
export type TaskPayloadArgs<N extends string, Options> =
  undefined extends TaskInput<N> ? [payload?: TaskInput<N>, opts?: Options] : [payload: TaskInput<N>, opts?: Options]

/**
 * The type a task's `input` export accepts (`StandardSchemaV1.InferInput`,
 * or the `body` schema of a `defineSchema()` object); `Fallback` without one.
 * `M` is the module's type: `typeof import('./src/api/jobs/notify.ts')`.
 */
export type TaskModuleInput<M, Fallback = unknown> = M extends { input: infer Schema } ? SchemaInput<Schema> : Fallback

/** The awaited return of a task module's `POST` export. */
// biome-ignore lint/suspicious/noExplicitAny: any handler parameters
export type TaskModuleResult<M> = M extends { POST: (...args: any[]) => infer Result } ? Awaited<Result> : unknown

// The input side of `SchemaOutput` (schema.ts); private, as only task modules are typed by their input.
type SchemaInput<Schema> = Schema extends StandardSchemaV1
  ? StandardSchemaV1.InferInput<Schema>
  : Schema extends { body: StandardSchemaV1 }
    ? StandardSchemaV1.InferInput<Schema['body']>
    : unknown
