/**
 * The run rows this connection last read or wrote, so that reading a run
 * back (the runner does, between every step) costs no query. Rows are kept
 * as the stored JSON text: each read still parses its own copy.
 *
 * Another process on the same file may change any row. SQLite's
 * `PRAGMA data_version` changes exactly when another connection has
 * committed (https://www.sqlite.org/pragma.html#pragma_data_version), so
 * the store checks it before trusting the cache and empties it when it
 * moved; this connection's own writes update the cache as they happen.
 */
import type { RunRow } from '../runtime/tasks/sql/queries.ts'

export class RowCache {
  #rows = new Map<string, RunRow>()
  #limit: number
  #version: number | undefined

  constructor(limit: number) {
    this.#limit = limit
  }

  /** Empties the cache unless `version` (the current `data_version`) is the one it was filled under. */
  check(version: number): void {
    if (version === this.#version) return
    this.#rows.clear()
    this.#version = version
  }

  get(id: string): RunRow | undefined {
    return this.#rows.get(id)
  }

  set(id: string, row: RunRow): void {
    // Re-inserted at the end, so the bound drops the rows used longest ago.
    this.#rows.delete(id)
    this.#rows.set(id, row)
    if (this.#rows.size > this.#limit) this.#rows.delete(this.#rows.keys().next().value!)
  }

  delete(id: string): void {
    this.#rows.delete(id)
  }

  /** Forgets everything, for when a write failed and the rows it touched are in doubt. */
  clear(): void {
    this.#rows.clear()
    this.#version = undefined
  }
}
