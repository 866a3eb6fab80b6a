/**
 * Errors crossing the tasks Durable Object's RPC (src/cloudflare/rpc.ts):
 * sent as JSON and rebuilt on the worker's side as the classes the engine
 * threw, with their status, code, message, `Retry-After` and the ids an
 * update's errors carry, so the worker answers as a Node server does.
 */
import { describe, expect, it } from 'vitest'
import { decodeError, encodeError } from '../../src/cloudflare/rpc.ts'
import { SvcError, ValidationError } from '../../src/runtime/errors.ts'
import { knownErrorResponse } from '../../src/runtime/http/errors.ts'
import { TooManyUpdatesError, UpdateFailedError, UpdateNotHandledError, UpdateTimeoutError } from '../../src/runtime/update-errors.ts'

const across = (error: unknown) => decodeError(JSON.parse(JSON.stringify(encodeError(error))))

describe('errors across the tasks object RPC', () => {
  it('rebuilds the errors of an update as their classes, with status, code, message and ids', () => {
    const cases: [SvcError, new (...args: never[]) => SvcError, number, string][] = [
      [new UpdateTimeoutError('run-1', 'u-1', 'slow', 1), UpdateTimeoutError, 504, 'UPDATE_PENDING'],
      [new UpdateFailedError('run-1', 'u-1', 'add-item', 'no bombs'), UpdateFailedError, 422, 'UPDATE_FAILED'],
      [new UpdateNotHandledError('run-1', 'no handler of "remove-item"'), UpdateNotHandledError, 404, 'UPDATE_NOT_HANDLED'],
      [new TooManyUpdatesError('run-1', 100), TooManyUpdatesError, 429, 'TOO_MANY_UPDATES'],
    ]
    for (const [error, Class, status, code] of cases) {
      const rebuilt = across(error) as SvcError & { runId?: string; updateId?: string }
      expect(rebuilt).toBeInstanceOf(Class)
      expect(rebuilt).toMatchObject({ status, code, message: error.message, runId: 'run-1' })
      if ('updateId' in error) expect(rebuilt.updateId).toBe('u-1')
    }
    const full = knownErrorResponse(Response, across(new TooManyUpdatesError('run-1', 100)))!
    expect(full.status).toBe(429)
    expect(full.headers.get('retry-after')).toBe('5')
  })

  it('keeps the details of bad data, and the Retry-After of an error no class is rebuilt for', () => {
    const bad = across(new ValidationError([{ target: 'input', path: ['sku'], message: 'too short' }], 'sku: too short'))
    expect(bad).toBeInstanceOf(ValidationError)
    expect((bad as ValidationError).details).toEqual([{ target: 'input', path: ['sku'], message: 'too short' }])
    const busy = Object.defineProperty(new SvcError('busy', 'BUSY', 503), 'retryAfterSeconds', { value: 7 })
    const rebuilt = across(busy) as SvcError
    expect(rebuilt).toMatchObject({ code: 'BUSY', status: 503, retryAfterSeconds: 7 })
    expect(knownErrorResponse(Response, rebuilt)!.headers.get('retry-after')).toBe('7')
  })
})
