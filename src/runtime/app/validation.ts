/**
 * A route's `schema` export, applied before its handler (the `query` key
 * maps to the framework's querystring).
 * Every part is checked and every issue reported at once; validated values
 * reach the handler through `req.valid('json' | 'query' | 'param' | 'header')`.
 */
import type { SchemaDefinition, ValidationIssue } from '../types.ts'
import { readJsonBody } from '../http/body.ts'
import { ValidationError } from '../errors.ts'
import { validate } from '../schema.ts'
import type { SvcRequest } from '../http/types.ts'

/** POST, PUT and PATCH always have their body validated; DELETE only when it carries one (RFC 9110 §9.3.5). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Validates `req` against `schema`; rejects with `ValidationError` (400) listing every issue. */
export async function validateRequest(req: SvcRequest, schema: SchemaDefinition, bodyLimit: number): Promise<void> {
  const details: ValidationIssue[] = []
  const check = async (run: () => Promise<void>) => {
    try {
      await run()
    } catch (error) {
      if (error instanceof ValidationError) details.push(...error.details)
      else throw error
    }
  }
  if (schema.params) {
    await check(async () =>
      req.addValidatedData('param', (await validate(schema.params!, req.param(), 'params')) as Record<string, unknown>),
    )
  }
  if (schema.query) {
    await check(async () => req.addValidatedData('query', (await validate(schema.query!, req.query(), 'query')) as Record<string, unknown>))
  }
  if (schema.headers) {
    await check(async () =>
      req.addValidatedData('header', (await validate(schema.headers!, req.header(), 'headers')) as Record<string, unknown>),
    )
  }
  if (schema.body && BODY_METHODS.has(req.raw.method)) {
    // A malformed or oversized body is its own error (400 INVALID_JSON, 413), not a validation issue.
    const { text, value } = await readJsonBody(req.raw, bodyLimit)
    // The stream is consumed: keep the text so `req.json()`/`req.text()` still work in the handler.
    ;(req.bodyCache as Record<string, unknown>).text = Promise.resolve(text)
    if (req.raw.method !== 'DELETE' || text !== '') {
      await check(async () => req.addValidatedData('json', (await validate(schema.body!, value, 'body')) as Record<string, unknown>))
    }
  }
  if (details.length > 0) throw new ValidationError(details)
}
