/**
 * Batch triggers (`triggerMany`, `enqueueMany`, `POST /__tasks/<name>/batch`):
 * their bound, the idempotency key of each item, and how an item that did
 * not start says why. Edge-safe: no `node:` import.
 */
import type { BatchItem } from '../../types.ts'
import { errorMessage, SvcError, ValidationError } from '../../errors.ts'
import { SVC_KEY_MARK, svcRunKey } from '../base/ids.ts'

/** The most runs one batch starts. */
export const MAX_BATCH_ITEMS = 10_000

/**
 * The idempotency key of item `index` of a batch sent with `key`: the same
 * batch sent again (a retry after a lost answer) starts nothing more, item
 * by item. A key of svc's own (`svcRunKey`), so no single trigger's key
 * answers for an item; the index comes first, digits up to a colon, so
 * (`key`, `index`) reads back from it whatever `key` holds.
 */
export function batchItemKey(key: string, index: number): string {
  return svcRunKey('batch', `${index}:${key}`)
}

const BATCH_ITEM_PREFIX = `${SVC_KEY_MARK}batch:`

/** The batch key `key` was made from by `batchItemKey`, or `undefined` for a key of another form. */
export function batchKeyOf(key: string): string | undefined {
  if (!key.startsWith(BATCH_ITEM_PREFIX)) return undefined
  const colon = key.indexOf(':', BATCH_ITEM_PREFIX.length)
  const index = key.slice(BATCH_ITEM_PREFIX.length, colon)
  return colon > BATCH_ITEM_PREFIX.length && /^\d+$/.test(index) ? key.slice(colon + 1) : undefined
}

/** An item that did not start: the error's message, its code (`INTERNAL` for an error svc did not raise on purpose), and a validation's issues. */
export function batchError(error: unknown): BatchItem {
  if (error instanceof ValidationError) return { ok: false, error: error.message, code: error.code, details: error.details }
  if (error instanceof SvcError) return { ok: false, error: error.message, code: error.code }
  return {
    ok: false,
    error: errorMessage(error),
    code: error instanceof RangeError || error instanceof TypeError ? 'INVALID_PAYLOAD' : 'INTERNAL',
  }
}
