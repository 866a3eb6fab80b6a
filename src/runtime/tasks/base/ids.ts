/**
 * Identifiers. Run ids are time-ordered UUIDs (version 7: the creation time
 * in milliseconds, then 74 random bits from Web Crypto, available in Node,
 * workers and function platforms; or version 8, where 12 of those bits
 * name a shard and 62 stay random, `runIdShard`). Everything derived from a run id plus a
 * step key is deterministic, so replaying a handler finds the same token,
 * the same child run and the same timer again.
 */

/** Random bytes for this many ids are drawn at once: one call into the CSPRNG per batch. */
const IDS_PER_DRAW = 256
const pool = new Uint8Array(16 * IDS_PER_DRAW)
let drawn = 16 * IDS_PER_DRAW
const HEX_DIGITS = Array.from('0123456789abcdef', (digit) => digit.charCodeAt(0))
// The character codes of the id being built; the dashes stay in place.
const codes: number[] = Array.from('xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx', (char) => char.charCodeAt(0))

/**
 * A time-ordered (version 7) UUID: 48 bits of Unix time in milliseconds,
 * then random bits from the same CSPRNG as `crypto.randomUUID()`.
 *
 * Time order is for the stores: every store indexes runs by id, and a
 * random id lands on a random page of that index, so with 100,000 retained
 * runs each batch of writes dirtied (and wrote to the log) pages all over
 * it. Ids that grow with time append to the index's last pages, and the
 * oldest runs, which eviction deletes, sit together at its start. 74 random
 * bits stay, so an id (and the token ids made from it) cannot be guessed.
 *
 * Built here because `randomUUID()` costs more than the rest of a run's
 * dispatch: in Node it assembles the id from some twenty string
 * concatenations, half a kilobyte of garbage per id.
 */
/** What makes a new run's id from its creation time (and shard): `newRunId`, or under `svcjs/testing` a sequence. */
export type NewRunId = (now: number, shard?: number) => string

export function newRunId(now: number = Date.now(), shard?: number): string {
  if (drawn === pool.length) {
    crypto.getRandomValues(pool)
    drawn = 0
  }
  const at = drawn
  drawn += 16
  // RFC 9562, section 5.7: the timestamp big-endian in bytes 0-5, version 7
  // in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
  const high = Math.floor(now / 2 ** 32)
  const low = now >>> 0
  pool[at] = (high >>> 8) & 0xff
  pool[at + 1] = high & 0xff
  pool[at + 2] = low >>> 24
  pool[at + 3] = (low >>> 16) & 0xff
  pool[at + 4] = (low >>> 8) & 0xff
  pool[at + 5] = low & 0xff
  if (shard === undefined) {
    pool[at + 6] = (pool[at + 6] & 0x0f) | 0x70
  } else {
    // Version 8 (RFC 9562, section 5.8): the 12 bits after the version hold the shard.
    pool[at + 6] = 0x80 | ((shard >>> 8) & 0x0f)
    pool[at + 7] = shard & 0xff
  }
  pool[at + 8] = (pool[at + 8] & 0x3f) | 0x80
  let c = 0
  for (let i = at; i < at + 16; i++) {
    if (c === 8 || c === 13 || c === 18 || c === 23) c++
    const byte = pool[i]
    codes[c++] = HEX_DIGITS[byte >> 4]
    codes[c++] = HEX_DIGITS[byte & 0x0f]
  }
  return String.fromCharCode.apply(null, codes)
}

/**
 * The shard a run id names: `newRunId(now, shard)` makes a version 8 UUID
 * with the shard in the 12 bits after the version, where the runs of an
 * app spread over several runtimes (the tasks Durable Objects of a worker
 * with `shards`). Any other id names none: a version 7 id was made where
 * the runs were not spread. A token id, which starts with its run's id,
 * names its run's shard.
 */
export function runIdShard(id: string): number | undefined {
  if (id.length < 18 || id.charCodeAt(14) !== 0x38 || id.charCodeAt(13) !== 0x2d) return undefined
  const shard = Number.parseInt(id.slice(15, 18), 16)
  return Number.isNaN(shard) ? undefined : shard
}

/**
 * The id of the token that `ctx.step.waitForToken(key)` waits for in run
 * `runId`. It is deterministic so a handler can hand it out (in a link or an
 * email) from a `step.run` before it waits; it also appears in the run's
 * `suspended.waitpoint.tokenId`. Run ids hold 74 random bits, so token ids
 * cannot be guessed from a task name.
 */
export function tokenIdFor(runId: string, stepKey: string): string {
  return `${runId}:${stepKey}`
}

/**
 * The first character of every idempotency key svc makes for a run (an
 * event's, a batch item's, a child's): U+001F, a control character. A key
 * a caller gives may not start with one (`checkIdempotencyKey`), so it can
 * never equal a key svc makes and take the place of the run svc starts
 * under it. Keys stored by releases before this one lack it.
 */
export const SVC_KEY_MARK = '\u001f'

/** A key of svc's own for a run: the mark, a tag naming what made it, then the parts that make it unique. */
export function svcRunKey(tag: 'event' | 'batch' | 'step' | 'schedule', rest: string): string {
  return `${SVC_KEY_MARK}${tag}:${rest}`
}

/**
 * The idempotency key of a child run started by `step.enqueue` or
 * `step.waitForTask` without an explicit one: a replay finds the child it
 * already started instead of starting another.
 */
export function childIdempotencyKey(parentRunId: string, stepKey: string): string {
  return svcRunKey('step', `${parentRunId}:${stepKey}`)
}

/**
 * The idempotency key a `ctx.step.run` function is given for the effects it
 * asks other services for (a payment, an email): the same for every attempt
 * and replay of the step, and for no other step or run. `svc:` keeps it
 * apart from the step's token id, which completes a wait.
 */
export function stepIdempotencyKey(runId: string, stepKey: string): string {
  return `svc:${runId}:${stepKey}`
}

/** Timer ids: one pending timer per run and purpose. */
export function timerId(
  runId: string,
  purpose: 'delay' | 'retry' | 'sleep' | 'token-timeout' | 'child' | 'deadline' | 'schedule',
  stepKey?: string,
): string {
  return stepKey === undefined ? `${runId}:${purpose}` : `${runId}:${purpose}:${stepKey}`
}
