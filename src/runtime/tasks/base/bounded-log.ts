/**
 * The rule both of a run's kept logs follow, its data chunks (`ctx.stream`,
 * run-chunks.ts) and its log entries (`ctx.log`, run-logs.ts): a new entry
 * goes last, and the oldest go first while the log is over its count or its
 * bytes; the newest stays whatever happens. Edge-safe.
 */

/** The bounds of a kept log. */
export interface LogBounds {
  /** Most entries kept. */
  count: number
  /** Most bytes the kept entries take together. */
  bytes: number
}

/** What appending to a bounded log gave: the entries kept, frozen, their bytes, and how many old ones went. */
export interface Appended<E> {
  kept: E[]
  bytes: number
  dropped: number
}

/**
 * `kept` (of `total` bytes) with `entry` (of `bytes`) added last, the oldest
 * dropped to keep `bounds`; `size` tells an entry's bytes. A new array,
 * frozen as the entry: a store that keeps the object it was given (the
 * memory store) shares it with every reader.
 */
export function appendBounded<E extends object>(
  kept: readonly E[] | undefined,
  total: number,
  entry: E,
  bytes: number,
  bounds: LogBounds,
  size: (entry: E) => number,
): Appended<E> {
  const next = kept === undefined ? [] : kept.slice()
  next.push(Object.freeze(entry))
  total += bytes
  let dropped = 0
  while (next.length - dropped > 1 && (next.length - dropped > bounds.count || total > bounds.bytes)) {
    total -= size(next[dropped])
    dropped++
  }
  return {
    kept: Object.freeze(dropped === 0 ? next : next.slice(dropped)) as E[],
    bytes: Math.max(total, bytes),
    dropped,
  }
}
