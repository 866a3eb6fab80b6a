/**
 * Where the ISR cache keeps rendered pages. A small interface, so a shared
 * store (Redis, KV) can replace the memory one without touching the cache
 * logic; every method may answer synchronously or with a promise.
 */
import { describe } from '../describe.ts'

type MaybePromise<T> = T | Promise<T>

/** One rendered page. */
export interface CacheEntry {
  /** The response body. */
  body: string | Uint8Array
  status: number
  /** Response headers, lower-cased, in order. */
  headers: [string, string][]
  /** When it was rendered, in milliseconds since the epoch. */
  createdAt: number
  /** Seconds it stays fresh; `null` keeps it until it is purged. */
  revalidate: number | null
  tags: string[]
}

export interface CacheStore {
  get(key: string): MaybePromise<CacheEntry | undefined>
  set(key: string, entry: CacheEntry): MaybePromise<void>
  /** Whether an entry was removed. */
  delete(key: string): MaybePromise<boolean>
  /** Every key, for purges by path prefix and by tag. */
  keys(): MaybePromise<Iterable<string>>
}

export interface MemoryCacheStoreOptions {
  /**
   * Most entries kept; the least recently used goes first. Keys include the
   * query string, so without a bound any client could grow the cache at will.
   * @default 1000
   */
  maxEntries?: number
}

export const DEFAULT_MAX_ENTRIES = 1000

/** The in-process store: a `Map` in least-recently-used order. */
export class MemoryCacheStore implements CacheStore {
  readonly maxEntries: number
  #entries = new Map<string, CacheEntry>()

  constructor(options: MemoryCacheStoreOptions = {}) {
    const max = options.maxEntries ?? DEFAULT_MAX_ENTRIES
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`MemoryCacheStore: maxEntries must be a positive integer (got ${describe(max)})`)
    }
    this.maxEntries = max
  }

  get(key: string): CacheEntry | undefined {
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      // Re-insert to mark it most recently used.
      this.#entries.delete(key)
      this.#entries.set(key, entry)
    }
    return entry
  }

  set(key: string, entry: CacheEntry): void {
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
  }

  delete(key: string): boolean {
    return this.#entries.delete(key)
  }

  keys(): string[] {
    return [...this.#entries.keys()]
  }

  get size(): number {
    return this.#entries.size
  }
}
