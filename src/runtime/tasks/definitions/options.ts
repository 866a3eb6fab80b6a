/**
 * Checks of caller-supplied options. Misuse is a `TypeError` (wrong type)
 * or a `RangeError` (out of range) that names the option and shows the
 * value ("(got …)"), so the fix is obvious.
 *
 * The rule for `EnqueueOptions` is written once here and applies wherever
 * they enter: `enqueue()`, `ctx.step.enqueue`/`waitForTask`, the runtime's
 * `trigger` and the `Idempotency-Key`/`Svc-Delay-Seconds` headers of the
 * task admin surface (which answers 400 `INVALID_OPTIONS` with the message).
 */
import { instantMs } from '../base/clock.ts'
import type { EnqueueOptions, RunTrace, RunTrigger, TriggerOptions } from '../../types/runs.ts'
import { describe } from '../../describe.ts'
import { batchKeyOf } from '../flow/batch.ts'
import { childIdempotencyKey } from '../base/ids.ts'
import { tagsOption } from './tags.ts'

/**
 * The longest delay a run may be enqueued with: 365 days, the longest wait
 * durable workflow engines accept (Cloudflare Workflows and Inngest cap
 * sleeps at a year). Anything longer is more likely a unit mistake than a
 * plan, and far enough out the due date does not exist (Date ends at
 * 8.64e15 ms).
 */
export const MAX_DELAY_SECONDS = 365 * 24 * 60 * 60

/**
 * The longest idempotency key, in characters: 255, as Stripe allows. Keys
 * are kept with their run and indexed by durable stores, and travel in the
 * `Idempotency-Key` header, which hosts cap at a few KiB.
 */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

/** Run priorities are whole numbers from -`MAX_PRIORITY` to `MAX_PRIORITY`; 0 is the default. */
export const MAX_PRIORITY = 1000

/** `priority` (of `route`, or of `enqueue`'s options under `label`); `shown` is what the caller sent, as for `checkDelaySeconds`. */
export function priorityProblem(value: unknown, label = 'route.priority', shown: unknown = value): string | null {
  return typeof value === 'number' && Number.isInteger(value) && Math.abs(value) <= MAX_PRIORITY
    ? null
    : `${label} must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}; higher starts first (got ${describe(shown)})`
}

const TRIGGERS: readonly RunTrigger[] = ['manual', 'cron', 'enqueue', 'child']

export interface CheckedTriggerOptions {
  delaySeconds: number
  idempotencyKey: string | undefined
  trigger: RunTrigger
  parentRunId: string | undefined
  trace: RunTrace | undefined
  /** Absent: the task's `route.priority`. */
  priority: number | undefined
  /** ISO 8601; absent: the task's `route.maxDuration`, if any. */
  deadline: string | undefined
  /** Checked and without repeats; absent for none. */
  tags: string[] | undefined
}

const DEFAULTS: CheckedTriggerOptions = Object.freeze({
  delaySeconds: 0,
  idempotencyKey: undefined,
  priority: undefined,
  trigger: 'manual',
  parentRunId: undefined,
  trace: undefined,
  deadline: undefined,
  tags: undefined,
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
  const { delaySeconds = 0, idempotencyKey, trigger = 'manual', parentRunId, trace, priority } = opts
  checkDelaySeconds(delaySeconds, where)
  checkPriority(priority, where)
  const deadline = deadlineOption(opts.deadline, where)
  const tags = tagsOption(opts.tags, where)
  checkTriggerKey(idempotencyKey, parentRunId, call, where)
  if (!TRIGGERS.includes(trigger)) {
    throw new TypeError(`${where()}: trigger must be one of ${TRIGGERS.join(', ')} (got ${describe(trigger)})`)
  }
  if (parentRunId !== undefined && typeof parentRunId !== 'string') {
    throw new TypeError(`${where()}: parentRunId must be a run id string (got ${describe(parentRunId)})`)
  }
  if (trace !== undefined && (trace === null || typeof trace !== 'object' || typeof trace.traceparent !== 'string')) {
    throw new TypeError(`${where()}: trace must be { traceparent, tracestate? } (got ${describe(trace)})`)
  }
  return { delaySeconds, idempotencyKey, trigger, parentRunId, trace, priority, deadline, tags }
}

/**
 * The key of `TriggerOptions`: a caller's, under `checkIdempotencyKey`, or
 * one of the two keys of svc's own that reach a runtime by `trigger`. A
 * child's (`childIdempotencyKey`, with its `parentRunId`), which comes
 * from another shard when the child's place is there; and, on `trigger`
 * alone, a batch item's, which a runtime that spreads a batch over shards
 * sends item by item. Those grow with the step key or the batch key; the
 * length limit is for keys that callers choose.
 */
function checkTriggerKey(key: unknown, parentRunId: unknown, call: string, where: () => string): void {
  if (typeof key === 'string') {
    if (typeof parentRunId === 'string' && key.startsWith(childIdempotencyKey(parentRunId, ''))) return
    const batchKey = call === 'trigger' ? batchKeyOf(key) : undefined
    if (batchKey !== undefined) {
      checkIdempotencyKey(batchKey, where)
      return
    }
  }
  checkIdempotencyKey(key, where)
}

/** Validates the `EnqueueOptions` a caller passed to `where` (such as `ctx.step.enqueue("key")`). */
export function checkEnqueueOptions(opts: EnqueueOptions | undefined, where: string): void {
  if (opts === undefined || opts === null) return
  if (typeof opts !== 'object') throw new TypeError(`${where}: options must be an object (got ${describe(opts)})`)
  checkDelaySeconds(opts.delaySeconds ?? 0, () => where)
  checkIdempotencyKey(opts.idempotencyKey, () => where)
  checkPriority(opts.priority, () => where)
  deadlineOption(opts.deadline, () => where)
  tagsOption(opts.tags, () => where)
}

/** Before it, a number is more likely a duration in seconds or milliseconds than an instant: 2000-01-01. */
const EARLIEST_DEADLINE = Date.UTC(2000, 0, 1)

/**
 * `deadline`: absent, or an instant (a `Date`, an ISO 8601 string or epoch
 * milliseconds), as ISO 8601. A past one is taken (the run then fails at
 * once); one before 2000 is refused as the duration it likely is.
 * `shown` as for `checkDelaySeconds`.
 */
export function deadlineOption(value: unknown, where: () => string, shown: unknown = value): string | undefined {
  if (value === undefined) return undefined
  const ms = instantMs(value, true)
  if (!Number.isFinite(ms)) {
    throw new TypeError(
      `${where()}: deadline must be an instant: a Date, an ISO 8601 string or epoch milliseconds (got ${describe(shown)})`,
    )
  }
  if (ms < EARLIEST_DEADLINE) {
    throw new RangeError(
      `${where()}: deadline must be an instant, not a duration (got ${describe(shown)}, before 2000); for a time from now, pass new Date(Date.now() + ms), or set route.maxDuration`,
    )
  }
  return new Date(ms).toISOString()
}

/** `priority`: absent, or a whole number from -`MAX_PRIORITY` to `MAX_PRIORITY`. `shown` as for `checkDelaySeconds`. */
export function checkPriority(value: unknown, where: () => string, shown: unknown = value): void {
  if (value === undefined) return
  const problem = priorityProblem(value, 'priority', shown)
  if (problem === null) return
  throw typeof value === 'number' ? new RangeError(`${where()}: ${problem}`) : new TypeError(`${where()}: ${problem}`)
}

/**
 * `delaySeconds`: a finite number of seconds from 0 to `MAX_DELAY_SECONDS`.
 * `shown` is what the caller sent, when it was not this value (a header's text).
 */
export function checkDelaySeconds(value: unknown, where: () => string, shown: unknown = value): void {
  if (typeof value !== 'number') {
    throw new TypeError(`${where()}: delaySeconds must be a finite number of seconds, 0 or more (got ${describe(shown)})`)
  }
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${where()}: delaySeconds must be a finite number of seconds, 0 or more (got ${describe(shown)})`)
  }
  if (value > MAX_DELAY_SECONDS) {
    throw new RangeError(`${where()}: delaySeconds must be at most ${MAX_DELAY_SECONDS} seconds (365 days) (got ${describe(shown)})`)
  }
}

/**
 * `idempotencyKey`: absent, or a string with a character other than
 * whitespace (HTTP strips the whitespace around a header value, so a blank
 * key could not travel) of at most `MAX_IDEMPOTENCY_KEY_LENGTH` characters,
 * that does not start with a control character (tab aside): the keys svc makes for
 * runs start with one (`SVC_KEY_MARK`), and a caller's key must never
 * equal one of them.
 */
export function checkIdempotencyKey(value: unknown, where: () => string, shown: unknown = value): void {
  if (value === undefined) return
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`${where()}: idempotencyKey must be a non-empty string (got ${describe(shown)})`)
  }
  if (value.trim() === '') {
    throw new TypeError(`${where()}: idempotencyKey must contain a character other than whitespace (got ${describe(shown)})`)
  }
  if (startsWithControl(value)) {
    throw new TypeError(
      `${where()}: idempotencyKey must not start with a control character (U+0000 to U+001F but tab, or U+007F), which marks the keys svc makes itself; drop or replace it (got ${describe(shown)})`,
    )
  }
  if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new RangeError(
      `${where()}: idempotencyKey must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (got ${value.length} characters)`,
    )
  }
}

/**
 * A C0 control or DEL first. Tab is left to the whitespace rules: a tab
 * around a key is whitespace HTTP strips, and `enqueue` over HTTP refuses
 * it as such.
 */
function startsWithControl(key: string): boolean {
  const code = key.charCodeAt(0)
  return (code < 0x20 && code !== 0x09) || code === 0x7f
}
