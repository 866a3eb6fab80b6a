/**
 * The run rows this connection last read or wrote, so that writing a run
 * again (the runner does, several times per run) or reading it back costs
 * no query and no parse of its text.
 *
 * A live run is kept as the parsed record, which the store changes in place
 * on each write (handing out copies of it). A finished run is rarely written
 * again, so it is kept as its stored JSON text, about a third of the memory
 * of the parsed record, and a read parses its own copy.
 *
 * The cache is bounded by weight rather than by rows, so that small runs
 * can all stay cached in a store that retains many of them: the weight of a
 * row is the length of its text plus a fixed overhead, three times the text
 * for a parsed record. Past the bound, the rows cached first go first.
 *
 * Another process on the same file may change any row. SQLite's
 * `PRAGMA data_version` changes exactly when another connection has
 * committed (https://www.sqlite.org/pragma.html#pragma_data_version), so
 * the store checks it before trusting the cache and empties it when it
 * moved; this connection's own writes update the cache as they happen.
 *
 * So while a batch of writes is open (group-commit.ts), the cache
 * holds its writes before they are committed. Only the batch's own writes
 * read it then, which must see them (a compare-and-set reads what the
 * batch wrote before it); the store's reads wait for the batch to end. A
 * batch that commits leaves the cache holding what is committed; a write
 * that is undone, or a batch rolled back, empties it, since the rows it
 * touched are in doubt.
 */
import type { RunRecord } from '../types.ts'

/** A run's row as this connection knows it: `run` while it is live, `text` once it has finished. */
export interface CachedRun {
  /** The rowid, which addresses updates. */
  seq: number
  /** The eviction position of a finished run, `null` while it is live. */
  finished_seq: number | null
  /** The record as stored, parsed: private to the store, never handed out. */
  run?: RunRecord
  /** The record's stored JSON text, when `run` is not kept. */
  text?: string
  /** Its weight against the cache's bound, set by the cache. */
  weight: number
}

// A Map entry and the row object around the text, roughly, in characters.
const ROW_OVERHEAD = 128
// A parsed record takes about three times its JSON text in the heap.
const PARSED_FACTOR = 3

export class RowCache {
  #rows = new Map<string, CachedRun>()
  #weight = 0
  #limit: number
  #version: number | undefined

  /** `limit`: the total weight kept, in characters of record text. */
  constructor(limit: number) {
    this.#limit = limit
  }

  /**
   * Empties the cache unless `version` (the current `data_version`) is the
   * one it was filled under; says whether it was (nobody else wrote since).
   */
  check(version: number): boolean {
    if (version === this.#version) return true
    this.clear()
    this.#version = version
    return false
  }

  get(id: string): CachedRun | undefined {
    return this.#rows.get(id)
  }

  /** Caches `row`; `length` is the length of its record's JSON text. */
  set(id: string, row: CachedRun, length: number): void {
    row.weight = ROW_OVERHEAD + (row.run ? PARSED_FACTOR * length : length)
    // A row written again keeps its place (Map#set on a key it holds), so
    // the bound drops the runs cached first: the oldest, which are read and
    // written least.
    this.#weight += row.weight - (this.#rows.get(id)?.weight ?? 0)
    this.#rows.set(id, row)
    if (this.#weight > this.#limit) this.#shrink()
  }

  /** Adds `length` characters of text to a parsed row's weight: a step saved into its record. */
  grow(id: string, length: number): void {
    const row = this.#rows.get(id)
    if (!row) return
    const more = PARSED_FACTOR * length
    row.weight += more
    this.#weight += more
    if (this.#weight > this.#limit) this.#shrink()
  }

  delete(id: string): void {
    const row = this.#rows.get(id)
    if (!row) return
    this.#rows.delete(id)
    this.#weight -= row.weight
  }

  #shrink(): void {
    for (const [oldest, row] of this.#rows) {
      if (this.#weight <= this.#limit) return
      this.#rows.delete(oldest)
      this.#weight -= row.weight
    }
  }

  /** Forgets everything, for when a write failed and the rows it touched are in doubt. */
  clear(): void {
    this.#rows.clear()
    this.#weight = 0
    this.#version = undefined
  }
}
