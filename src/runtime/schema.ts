import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { SchemaDefinition, SchemaLike, ValidationIssue, ValidationTarget } from './types/schema.ts'
import { ValidationError } from './errors.ts'

const DEFINED = Symbol.for('svc.schema')

/**
 * Groups the schemas of a request's parts. Each part is any Standard Schema
 * (valibot, zod, arktype, …). A task's `input` may be one of these, in which
 * case `body` validates the payload.
 */
export function defineSchema<T extends SchemaDefinition>(definition: T): T {
  if (definition === null || typeof definition !== 'object') {
    throw new TypeError(`defineSchema() expects an object of schemas (got ${typeof definition})`)
  }
  for (const [key, value] of Object.entries(definition)) {
    if (!['body', 'query', 'params', 'headers'].includes(key)) {
      throw new TypeError(`defineSchema(): unknown key "${key}"; use body, query, params or headers`)
    }
    if (value !== undefined && !isStandardSchema(value)) {
      throw new TypeError(`defineSchema(): "${key}" is not a Standard Schema (it has no "~standard" property)`)
    }
  }
  Object.defineProperty(definition, DEFINED, { value: true, enumerable: false })
  return definition
}

export function isStandardSchema(value: unknown): value is SchemaLike {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { '~standard'?: { validate?: unknown } })['~standard']?.validate === 'function'
  )
}

/** True for the object `defineSchema` returned, or any plain object of part schemas. */
export function isSchemaDefinition(value: unknown): value is SchemaDefinition {
  if (value === null || typeof value !== 'object' || isStandardSchema(value)) return false
  if ((value as Record<symbol, unknown>)[DEFINED]) return true
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => ['body', 'query', 'params', 'headers'].includes(k))
}

/** Validates one value; resolves to the (possibly transformed) output or rejects with `ValidationError`. */
export async function validate<T>(schema: SchemaLike<T>, value: unknown, target: ValidationTarget): Promise<T> {
  let result = schema['~standard'].validate(value)
  if (result instanceof Promise) result = await result
  if (result.issues) throw new ValidationError(toIssues(result.issues, target))
  return (result as StandardSchemaV1.SuccessResult<T>).value
}

/**
 * Validates a task payload against a task's `input` export: a Standard Schema,
 * or a `defineSchema` object whose `body` validates the payload.
 */
export async function validateTaskInput(input: unknown, payload: unknown): Promise<unknown> {
  if (input === undefined || input === null) return payload
  if (isStandardSchema(input)) return validate(input, payload, 'input')
  if (isSchemaDefinition(input)) return input.body ? validate(input.body, payload, 'body') : payload
  throw new TypeError('The "input" export must be a Standard Schema or a defineSchema() object')
}

function toIssues(issues: ReadonlyArray<StandardSchemaV1.Issue>, target: ValidationTarget): ValidationIssue[] {
  return issues.map((issue) => ({
    target,
    path: (issue.path ?? []).map((segment) => {
      const key = typeof segment === 'object' && segment !== null ? segment.key : segment
      return typeof key === 'number' ? key : String(key)
    }),
    message: issue.message,
  }))
}
