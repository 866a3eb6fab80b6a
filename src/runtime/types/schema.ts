/** Request validation: the schemas a route declares and the issues a failed validation reports. */
import type { StandardSchemaV1 } from '@standard-schema/spec'

/** Any schema that implements the Standard Schema spec (valibot, zod, arktype, …). */
export type SchemaLike<T = unknown> = StandardSchemaV1<unknown, T>

/** Where a validation issue was found. */
export type ValidationTarget = 'body' | 'query' | 'params' | 'headers' | 'input' | 'data'

/** Schemas for each part of a request; built with `defineSchema`. */
export interface SchemaDefinition {
  body?: SchemaLike
  query?: SchemaLike
  params?: SchemaLike
  headers?: SchemaLike
}

/** One entry of a `VALIDATION_FAILED` body's `details`. */
export interface ValidationIssue {
  target: ValidationTarget
  /** Key path inside the target; empty for the value itself. */
  path: (string | number)[]
  message: string
}

/** What a handler's `ctx.input` holds for a schema: its validated output. */
export type SchemaOutput<Schema> = Schema extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<Schema>
  : Schema extends { body: StandardSchemaV1 }
    ? StandardSchemaV1.InferOutput<Schema['body']>
    : unknown
