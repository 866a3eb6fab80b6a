/**
 * Checks of caller-supplied options. Misuse is a `TypeError` that names the
 * option and shows the value ("(got …)"), so the fix is obvious.
 */
import type { RunTrigger, TriggerOptions } from '../../types.ts'

const TRIGGERS: readonly RunTrigger[] = ['manual', 'cron', 'enqueue', 'child']

export interface CheckedTriggerOptions {
  delaySeconds: number
  idempotencyKey: string | undefined
  trigger: RunTrigger
  parentRunId: string | undefined
}

const DEFAULTS: CheckedTriggerOptions = Object.freeze({
  delaySeconds: 0,
  idempotencyKey: undefined,
  trigger: 'manual',
  parentRunId: undefined,
})

/**
 * Validates `EnqueueOptions`/`TriggerOptions`. Messages start with
 * `<call>("<taskName>")`, such as `enqueue("report")`.
 */
export function checkTriggerOptions(opts: TriggerOptions | undefined, call: string, taskName: string): CheckedTriggerOptions {
  if (opts === undefined || opts === null) return DEFAULTS
  // Built only when needed: this runs on every dispatch.
  const where = () => `${call}("${taskName}")`
  if (typeof opts !== 'object') throw new TypeError(`${where()}: options must be an object (got ${describe(opts)})`)
  const { delaySeconds = 0, idempotencyKey, trigger = 'manual', parentRunId } = opts
  if (typeof delaySeconds !== 'number' || !Number.isFinite(delaySeconds) || delaySeconds < 0) {
    throw new TypeError(`${where()}: delaySeconds must be a finite number of seconds, 0 or more (got ${describe(delaySeconds)})`)
  }
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || idempotencyKey === '')) {
    throw new TypeError(`${where()}: idempotencyKey must be a non-empty string (got ${describe(idempotencyKey)})`)
  }
  if (!TRIGGERS.includes(trigger)) {
    throw new TypeError(`${where()}: trigger must be one of ${TRIGGERS.join(', ')} (got ${describe(trigger)})`)
  }
  if (parentRunId !== undefined && typeof parentRunId !== 'string') {
    throw new TypeError(`${where()}: parentRunId must be a run id string (got ${describe(parentRunId)})`)
  }
  return { delaySeconds, idempotencyKey, trigger, parentRunId }
}

/** A short, safe rendering of a bad value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : value.toISOString()
  return typeof value
}
