/**
 * The payload limit of the task runtime (`maxPayloadBytes`): how large an
 * input, a result, a step output or a token payload may be, in bytes of
 * UTF-8 JSON. It is checked in the core, where each value enters a run
 * (the engine for inputs, the handler call for results, `ctx.step.run`
 * for step outputs, `Waitpoints` for token payloads), so every store holds
 * to it.
 * Edge-safe.
 */
import { describe } from '../../describe.ts'
import { PayloadTooLargeError } from '../../errors.ts'
import { checkJson, type JsonFault } from '../base/json.ts'

/**
 * 1 MiB, the default request body limit of the admin surface: any input
 * that can be sent to `POST /__tasks/<name>` can be stored.
 */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024

/** Validates the `maxPayloadBytes` option passed to `where` (`createTaskRuntime()`); absent is the default. */
export function checkMaxPayloadBytes(value: unknown, where: string): number {
  if (value === undefined) return DEFAULT_MAX_PAYLOAD_BYTES
  const message = `${where}: maxPayloadBytes must be a positive whole number of bytes (got ${describe(value)})`
  if (typeof value !== 'number') throw new TypeError(message)
  if (!Number.isInteger(value) || value < 1) throw new RangeError(message)
  return value
}

/**
 * The error for a value `checkJson` found fault with: a `TypeError` that
 * starts with `notJson` when JSON cannot hold it, else a
 * `PayloadTooLargeError` whose message starts with `subject` (`The input
 * of task "x" is`) and names its size and the limit.
 */
export function payloadError(fault: JsonFault, maxBytes: number, notJson: string, subject: string): Error {
  if (fault.problem !== undefined) return new TypeError(`${notJson}: ${fault.problem}`)
  return new PayloadTooLargeError(
    maxBytes,
    `${subject} ${groupDigits(fault.bytes)} bytes of JSON, over the ${groupDigits(maxBytes)}-byte limit (maxPayloadBytes)`,
    fault.bytes,
  )
}

/** Throws `payloadError` for `value` when JSON cannot hold it or it is over `maxBytes`. */
export function assertPayload(value: unknown, maxBytes: number, notJson: string, subject: string): void {
  const fault = checkJson(value, maxBytes)
  if (fault !== undefined) throw payloadError(fault, maxBytes, notJson, subject)
}

/** `1048576` as `1,048,576`, the same in every locale. */
export function groupDigits(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}
