/**
 * An app's event schemas (`src/events.ts`, docs/events.md "Typed events"):
 * event name → Standard Schema. A send checks the data of each event whose
 * name has a schema, and stores what the schema outputs; a name without
 * one is sent unchecked, as in an app with no schemas. Edge-safe.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import { describe } from '../describe.ts'
import { ValidationError } from '../errors.ts'
import { isStandardSchema, validate } from '../schema.ts'
import { eventNameProblem } from './rules.ts'

/** Event name → the Standard Schema (valibot, zod, arktype, …) of its data. */
export type EventSchemas = Readonly<Record<string, StandardSchemaV1>>

/** Throws a `TypeError` naming the entry when `value` is not `EventSchemas`. */
export function checkEventSchemas(value: unknown, where: string): asserts value is EventSchemas | undefined {
  if (value === undefined) return
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `${where}: events must be an object of event name → schema, such as { 'order.paid': v.object({ … }) } (got ${describe(value)})`,
    )
  }
  for (const [name, schema] of Object.entries(value)) {
    const problem = eventNameProblem(name)
    if (problem) throw new TypeError(`${where}: events: ${problem}`)
    if (!isStandardSchema(schema)) {
      throw new TypeError(
        `${where}: events["${name}"] must be a Standard Schema (valibot, zod, arktype, …), such as v.object({ … }) (got ${describe(schema)})`,
      )
    }
  }
}

/**
 * The data of event `name` as its schema outputs it, or `data` itself when
 * the name has no schema. Rejects with a `ValidationError` (400
 * `VALIDATION_FAILED` over HTTP) that names the event and where its data
 * breaks the schema.
 */
export async function eventData(schemas: EventSchemas | undefined, name: string, data: unknown, where: string): Promise<unknown> {
  const schema = schemas && Object.hasOwn(schemas, name) ? schemas[name] : undefined
  if (!schema) return data
  try {
    return await validate(schema, data, 'data')
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error
    throw new ValidationError(
      error.details,
      `${where}: the data of event "${name}" does not fit its schema in src/events.ts: ${error.message}`,
    )
  }
}
