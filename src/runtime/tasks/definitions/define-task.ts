/**
 * `defineTask`: types a task handler's `ctx.input` from its schema, so a task
 * file does not write the input type by hand. It returns the handler, to be
 * exported as the file's `POST`; the schema is exported as `input` beside it,
 * which is what the scanner sees and the runtime validates against:
 *
 *   export const input = v.object({ email: v.string() })
 *   export const POST = defineTask({ input, handler: async (ctx) => ctx.input.email })
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { SchemaDefinition, SchemaOutput } from '../../types/schema.ts'
import type { TaskContext } from '../../types/task-context.ts'
import { describe } from '../../describe.ts'
import { isSchemaDefinition, isStandardSchema } from '../../schema.ts'

export interface TaskDefinitionInput<Schema, Result> {
  /** The task's `input` export: a Standard Schema or a `defineSchema()` object (its `body` validates). */
  input?: Schema
  /** The handler; `ctx.input` is the schema's validated output. */
  handler: (ctx: TaskContext<SchemaOutput<Schema>>) => Result
}

export function defineTask<Schema extends StandardSchemaV1 | SchemaDefinition | undefined = undefined, Result = unknown>(
  definition: TaskDefinitionInput<Schema, Result>,
): (ctx: TaskContext<SchemaOutput<Schema>>) => Result {
  if (definition === null || typeof definition !== 'object') {
    throw new TypeError(`defineTask(definition): definition must be an object with a handler (got ${describe(definition)})`)
  }
  const { input, handler } = definition
  if (typeof handler !== 'function') {
    throw new TypeError(`defineTask({ handler }): handler must be a function (got ${describe(handler)})`)
  }
  if (input !== undefined && !isStandardSchema(input) && !isSchemaDefinition(input)) {
    throw new TypeError(`defineTask({ input }): input must be a Standard Schema or a defineSchema() object (got ${describe(input)})`)
  }
  taskHandlers.add(handler)
  if (input !== undefined) {
    const schemas = declared.get(handler)
    if (schemas) schemas.add(input)
    else declared.set(handler, new Set([input]))
  }
  return handler
}

/**
 * Every handler given to `defineTask`. It returns the handler itself, so the
 * function is all a loaded module shows of it: a route that exports one
 * without being a task would run it for any caller, and the runtime refuses
 * such a route at start (`taskOnlyProblem`). Weak, so a handler dropped is
 * not kept.
 */
const taskHandlers = new WeakSet<object>()

/** Whether `value` is a handler given to `defineTask`. */
export function isTaskHandler(value: unknown): boolean {
  return typeof value === 'function' && taskHandlers.has(value)
}

/**
 * The schemas `defineTask` typed each handler's `ctx.input` from. The
 * runtime validates against the file's `input` export, so a schema given to
 * `defineTask` and not exported (or another one exported) would leave
 * `ctx.input` typed from a schema nothing checks: `taskInputProblem` finds
 * that when the task is registered. A set, for a handler reused with
 * several schemas; weak, so a handler dropped is not kept.
 */
const declared = new WeakMap<object, Set<unknown>>()

/** Why the `input` export of a task module does not match what `defineTask` was given for its `POST`, or undefined. */
export function taskInputProblem(handler: object, input: unknown): string | undefined {
  const schemas = declared.get(handler)
  if (schemas === undefined || schemas.has(input)) return undefined
  return input === undefined || input === null
    ? 'defineTask() was given an input schema, but the file does not export it as `input`, so payloads would reach the handler unchecked; add `export const input = …` with that schema'
    : 'the `input` export is not the schema given to defineTask(), so ctx.input would be typed from one schema and payloads checked against another; pass the exported `input` to defineTask'
}
