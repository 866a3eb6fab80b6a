/**
 * The rules of task route config and of the task secret, written once.
 * Each check is pure and returns the problem as a message, or `null` when
 * the value is fine: the scanner reports it at `file:line:col`, the runtime
 * throws it naming the task. Edge-safe.
 */
import { describe } from './describe.ts'
import type { CronClock } from './tasks/definitions/cron-clock.ts'
import type { EnvLike } from './env.ts'
import { MAX_DELAY_SECONDS } from './tasks/definitions/options.ts'

/** Task retries default to 0 extra attempts, and each attempt to 30 s (docs/routes.md "Route config"). */
export const DEFAULT_RETRIES = 0
export const DEFAULT_TIMEOUT_MS = 30_000

/**
 * The longest task timeout: setTimeout cannot wait longer than 2^31 − 1 ms
 * (about 24.8 days).
 */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1

/** Finished runs are kept 7 days on durable stores unless a task sets `route.retention` (seconds). */
export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 60 * 60

/** The longest `route.retention`: 100 years, past which a date is more likely a unit mistake. */
export const MAX_RETENTION_SECONDS = 100 * 365 * 24 * 60 * 60

/** `route.retention`, or the runtime's `retention` under `label`; `shown` is what the caller sent, when it was not this value (a variable's text). */
export function retentionProblem(value: unknown, label = 'route.retention', shown: unknown = value): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    return `${label} must be a positive number of seconds that finished runs are kept, such as ${DEFAULT_RETENTION_SECONDS} (7 days) (got ${describe(shown)})`
  }
  if (value > MAX_RETENTION_SECONDS) {
    return `${label} must be at most ${MAX_RETENTION_SECONDS} seconds (100 years) (got ${describe(shown)})`
  }
  return null
}

/** The longest `route.maxDuration`: 365 days, as the longest delay. */
export const MAX_DURATION_SECONDS = 365 * 24 * 60 * 60

export function maxDurationProblem(value: unknown): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    return `route.maxDuration must be a positive number of seconds a whole run may last, such as 3600 (got ${describe(value)})`
  }
  if (value > MAX_DURATION_SECONDS)
    return `route.maxDuration must be at most ${MAX_DURATION_SECONDS} seconds (365 days) (got ${describe(value)})`
  return null
}

export function retriesProblem(value: unknown): string | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0
    ? null
    : `route.retries must be a whole number of extra attempts, 0 or more (got ${describe(value)})`
}

export function timeoutProblem(value: unknown): string | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    return `route.timeout must be a positive number of milliseconds (got ${describe(value)})`
  }
  if (value > MAX_TIMEOUT_MS) {
    return `route.timeout must be at most ${MAX_TIMEOUT_MS} ms (about 24.8 days), the longest timer the runtime can set (got ${describe(value)})`
  }
  return null
}

export function timezoneProblem(value: unknown): string | null {
  return typeof value === 'string' && isTimeZone(value)
    ? null
    : `route.timezone must be an IANA time zone such as 'Europe/Berlin' or 'UTC' (got ${describe(value)})`
}

function isTimeZone(zone: string): boolean {
  if (zone.trim() === '') return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** The croner options of every schedule, so checking and firing agree. */
/** Collapses runs of whitespace, so two spellings of one expression compare equal. */
export function normalizeCron(expression: string): string {
  return expression.trim().split(/\s+/).join(' ')
}

/**
 * A schedule is the standard five cron fields (minute, hour, day of month,
 * month, day of week) and must fire at least once. croner alone would also
 * take seconds, years and nicknames such as `@daily`; schedules must run the
 * same on every target's scheduler, so only the five-field form passes.
 * Without a `clock` only the fields are counted: a worker, whose platform
 * reads the expression, runs what `svc build` checked in full.
 */
export function scheduleProblem(expression: unknown, timezone: string | null = null, clock?: Pick<CronClock, 'problem'>): string | null {
  if (typeof expression !== 'string') {
    return `schedule must be a cron expression string such as '0 * * * *' (got ${describe(expression)})`
  }
  const normalized = normalizeCron(expression)
  const fields = normalized === '' ? 0 : normalized.split(' ').length
  if (fields !== 5) {
    return `schedule "${expression}" must be a five-field cron expression (minute hour day-of-month month day-of-week), got ${fields} field${fields === 1 ? '' : 's'}`
  }
  const problem = clock?.problem(normalized, timezone)
  return problem ? `schedule "${expression}" ${problem}` : null
}

/** An older name of `SVC_TASK_SECRET`, still read so that deployments that set it keep working. */
export const TASK_SECRET_ALIAS = 'THEN_TASK_SECRET'

let aliasNoted = false

/**
 * The secret of the task admin surface, which `enqueue()` and
 * `completeToken()` send too: `SVC_TASK_SECRET`, else its alias
 * `THEN_TASK_SECRET`. The alias is noted once per process through `warn`,
 * naming the variable to set instead. An empty variable counts as unset,
 * since it would accept `Authorization: Bearer ` with nothing after it.
 */
export function taskSecret(env: EnvLike, warn: (message: string) => void = console.warn): string | undefined {
  const secret = env.SVC_TASK_SECRET || undefined
  const alias = env[TASK_SECRET_ALIAS] || undefined
  if (alias !== undefined && !aliasNoted) {
    aliasNoted = true
    warn(
      secret === undefined
        ? `[svc] ${TASK_SECRET_ALIAS} is read as SVC_TASK_SECRET, an alias kept for older deployments: rename the variable to SVC_TASK_SECRET`
        : `[svc] ${TASK_SECRET_ALIAS} is ignored, since SVC_TASK_SECRET is set: remove ${TASK_SECRET_ALIAS}`,
    )
  }
  return secret ?? alias
}

/**
 * The fewest bytes a task secret may have on a server outside development.
 * The secret is the bearer of the admin surface, and every run token is an
 * HMAC under a key derived from it (admin/run-token.ts), against which its
 * holder can test guesses offline. RFC 2104 §3 advises a key no shorter than
 * the hash's output, 32 bytes for SHA-256; 32 random bytes put guessing out
 * of reach.
 */
export const MIN_TASK_SECRET_BYTES = 32

/** How to make a secret that passes, for the messages. */
const MAKE_SECRET = 'openssl rand -hex 32'

/**
 * What is wrong with `secret` as a task secret, or `null` when it is long
 * enough. Counts UTF-8 bytes, which the key is made of, not characters.
 * The message never repeats the secret.
 */
export function taskSecretProblem(secret: string): string | null {
  const bytes = new TextEncoder().encode(secret).length
  if (bytes >= MIN_TASK_SECRET_BYTES) return null
  return `SVC_TASK_SECRET must be at least ${MIN_TASK_SECRET_BYTES} bytes, since anyone holding a run token can test guesses of it offline (got ${bytes} bytes). Set it to a random value: ${MAKE_SECRET}`
}

/**
 * A flow-control key: a dotted path into the task's validated input, rooted
 * at `input` (`'input.userId'`, `'input.account.id'`, or `'input'` for the
 * whole input). Runs whose input has no value there share one bucket.
 */
export function flowKeyProblem(field: string, value: unknown): string | null {
  if (typeof value === 'string' && /^input(\.[A-Za-z0-9_$]+)*$/.test(value)) return null
  return `route.${field}.key must be a dotted path into the task's input such as 'input.userId' (got ${describe(value)})`
}

/** Longest `rateLimit.periodSeconds` and `debounce.seconds`: the longest delay a run may have. */
const MAX_FLOW_SECONDS = MAX_DELAY_SECONDS

/** `route.concurrency`: a positive whole number, or `{ limit, key? }`. */
export function concurrencyProblem(value: unknown): string | null {
  const shape = `route.concurrency must be a whole number of runs, 1 or more, or { limit, key?, perKey? } such as { limit: 1, key: 'input.userId' }`
  if (typeof value === 'number') return positiveInteger(value) ? null : `${shape} (got ${describe(value)})`
  return (
    objectProblem('concurrency', value, ['limit', 'key', 'perKey'], shape) ??
    limitProblem('concurrency', (value as { limit?: unknown }).limit) ??
    optionalKeyProblem('concurrency', value) ??
    perKeyProblem(value as { limit: number; key?: unknown; perKey?: unknown })
  )
}

/** `route.concurrency.perKey`: with a `key`, a whole number of runs from 1 to `limit`, which then caps every key together. */
function perKeyProblem({ limit, key, perKey }: { limit: number; key?: unknown; perKey?: unknown }): string | null {
  if (perKey === undefined) return null
  if (key === undefined) {
    return `route.concurrency.perKey needs a key, the input field whose values take turns, such as { limit: 10, key: 'input.tenantId', perKey: 2 }`
  }
  if (!positiveInteger(perKey) || (perKey as number) > limit) {
    return `route.concurrency.perKey must be a whole number of runs from 1 to limit (${limit}), the most one key runs at once (got ${describe(perKey)})`
  }
  return null
}

/** `route.rateLimit`: `{ limit, periodSeconds, key? }`. */
export function rateLimitProblem(value: unknown): string | null {
  const shape = `route.rateLimit must be { limit, periodSeconds, key? } such as { limit: 10, periodSeconds: 60 }`
  return (
    objectProblem('rateLimit', value, ['limit', 'periodSeconds', 'key'], shape) ??
    limitProblem('rateLimit', (value as { limit?: unknown }).limit) ??
    secondsProblem('rateLimit.periodSeconds', (value as { periodSeconds?: unknown }).periodSeconds) ??
    optionalKeyProblem('rateLimit', value)
  )
}

/** `route.debounce`: `{ seconds, key? }`. */
export function debounceProblem(value: unknown): string | null {
  const shape = `route.debounce must be { seconds, key? } such as { seconds: 30, key: 'input.userId' }`
  return (
    objectProblem('debounce', value, ['seconds', 'key'], shape) ??
    secondsProblem('debounce.seconds', (value as { seconds?: unknown }).seconds) ??
    optionalKeyProblem('debounce', value)
  )
}

/**
 * Priority points a queued run gains per second it has waited, unless its
 * task sets `route.priorityAging` (docs/flow-control.md "Aging"). At
 * one point a second, a point of priority is worth a second of waiting: the
 * widest gap, a run at -1000 behind a stream at 1000, closes in 2000 s
 * (about 33 minutes), while a gap of a few points still decides the order
 * of a burst that clears within seconds.
 */
export const DEFAULT_PRIORITY_AGING = 1

/**
 * The fastest `route.priorityAging`: at 1000 points a second the widest
 * gap closes in 2 s, so anything faster is creation order in all but name;
 * the bound also keeps a run's weight a finite number however long it waits.
 */
export const MAX_PRIORITY_AGING = 1000

/** `route.priorityAging`: points per second above 0 and at most `MAX_PRIORITY_AGING`, or `false` for strict order. */
export function priorityAgingProblem(value: unknown): string | null {
  if (value === false || (typeof value === 'number' && value > 0 && value <= MAX_PRIORITY_AGING)) return null
  return `route.priorityAging must be the priority points a queued run gains per second it waits, above 0 and at most ${MAX_PRIORITY_AGING} (default ${DEFAULT_PRIORITY_AGING}), or false for strict priority order (got ${describe(value)})`
}

function positiveInteger(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1
}

function objectProblem(field: string, value: unknown, fields: readonly string[], shape: string): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${shape} (got ${describe(value)})`
  const unknown = Object.keys(value).find((name) => !fields.includes(name))
  return unknown === undefined ? null : `route.${field} has no field "${unknown}"; its fields are ${fields.join(', ')}`
}

function limitProblem(field: string, value: unknown): string | null {
  return positiveInteger(value) ? null : `route.${field}.limit must be a whole number of runs, 1 or more (got ${describe(value)})`
}

function secondsProblem(field: string, value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_FLOW_SECONDS) return null
  return `route.${field} must be a number of seconds above 0 and at most ${MAX_FLOW_SECONDS} (365 days) (got ${describe(value)})`
}

function optionalKeyProblem(field: string, value: unknown): string | null {
  const key = (value as { key?: unknown }).key
  return key === undefined ? null : flowKeyProblem(field, key)
}
