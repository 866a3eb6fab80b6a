/**
 * The ISR cache of hybrid pages: one entry per path plus query string.
 * - fresh entry: served as is (`x-svc-cache: HIT`);
 * - stale entry: served at once (`STALE`) while one background render per
 *   key replaces it (stale-while-revalidate, RFC 5861 §3);
 * - no entry: rendered in the request (`MISS`) and stored when cacheable.
 * Purges (by path or by tag) delete entries, so the next request renders.
 */
import type { Logger } from '../types.ts'
import type { ResponseClass } from '../http/types.ts'
import { trimTrailingSlashes } from '../http/path.ts'
import { describe } from '../describe.ts'
import { MemoryCacheStore, type CacheEntry, type CacheStore } from './cache-store.ts'

/** `startSvcServer`'s `cache` option. */
export interface SvcCacheConfig {
  /**
   * `'memory'`, or any object implementing `CacheStore`.
   * @default 'memory'
   */
  store?: 'memory' | CacheStore
  /**
   * Bound of the memory store. Ignored for a custom store.
   * @default 1000
   */
  maxEntries?: number
}

/** What a render produced: page HTML, or a whole response. */
export type Rendered = string | Response

export interface PageCacheInfo {
  /** The page's URL pattern, for logs. */
  path: string
  revalidate: number | null
  tags: readonly string[]
}

/** The JSON body `POST /__svc/revalidate` answers with. */
export interface RevalidateResult {
  ok: true
  /** Cache keys (path plus query) removed. */
  purged: string[]
  paths: string[]
  tags: string[]
}

const HTML_TYPE = 'text/html; charset=utf-8'

/** Builds the cache from the option; `false` turns it off. */
export function createIsrCache(config: SvcCacheConfig | false | undefined, where: string, logger: Logger): IsrCache | undefined {
  if (config === false) return undefined
  const c = config ?? {}
  if (typeof c !== 'object' || c === null) {
    throw new TypeError(`${where}: cache must be an object such as { store: 'memory' }, or false (got ${describe(config)})`)
  }
  const store = c.store ?? 'memory'
  if (store === 'memory') return new IsrCache(new MemoryCacheStore({ maxEntries: c.maxEntries }), logger)
  if (
    typeof store === 'object' &&
    store !== null &&
    ['get', 'set', 'delete', 'keys'].every((m) => typeof (store as unknown as Record<string, unknown>)[m] === 'function')
  ) {
    return new IsrCache(store, logger)
  }
  throw new TypeError(`${where}: cache.store must be 'memory' or an object with get, set, delete and keys (got ${describe(store)})`)
}

export class IsrCache {
  readonly store: CacheStore
  #logger: Logger
  #now: () => number
  #refreshing = new Map<string, Promise<void>>()
  /** Renders of keys with no entry yet, shared by concurrent misses. */
  #misses = new Map<string, Promise<CacheEntry | undefined>>()
  /** Bumped by every purge: a render that began before one must not store its result. */
  #epoch = 0

  constructor(store: CacheStore, logger: Logger, now: () => number = Date.now) {
    this.store = store
    this.#logger = logger
    this.#now = now
  }

  async serve(
    key: string,
    page: PageCacheInfo,
    render: () => Promise<Rendered>,
    R: ResponseClass,
    waitUntil?: (promise: Promise<unknown>) => void,
  ): Promise<Response> {
    const entry = await this.store.get(key)
    if (entry !== undefined) {
      const age = this.#now() - entry.createdAt
      const fresh = entry.revalidate === null || age < entry.revalidate * 1000
      if (!fresh) this.#refresh(key, page, render, waitUntil)
      return fromEntry(entry, fresh ? 'HIT' : 'STALE', age, R)
    }
    // Concurrent misses on one key share the first one's render; if that
    // render fails or is not cacheable, each request renders for itself.
    const pending = this.#misses.get(key)
    if (pending) {
      const shared = await pending
      if (shared !== undefined) return fromEntry(shared, 'MISS', this.#now() - shared.createdAt, R)
      return this.#renderMiss(key, page, render, R)
    }
    let share!: (entry: CacheEntry | undefined) => void
    this.#misses.set(key, new Promise((resolve) => (share = resolve)))
    let made: CacheEntry | undefined
    try {
      return await this.#renderMiss(key, page, render, R, (entry) => (made = entry))
    } finally {
      this.#misses.delete(key)
      share(made)
    }
  }

  async #renderMiss(
    key: string,
    page: PageCacheInfo,
    render: () => Promise<Rendered>,
    R: ResponseClass,
    onEntry?: (entry: CacheEntry) => void,
  ): Promise<Response> {
    const epoch = this.#epoch
    const rendered = await render()
    const made = await toEntry(rendered, page, this.#now())
    if (made === undefined) return typeof rendered === 'string' ? new R(rendered, { headers: { 'content-type': HTML_TYPE } }) : rendered
    if (epoch === this.#epoch) await this.store.set(key, made)
    onEntry?.(made)
    return fromEntry(made, 'MISS', 0, R)
  }

  /** Stale-while-revalidate: at most one background render per key at a time. */
  #refresh(key: string, page: PageCacheInfo, render: () => Promise<Rendered>, waitUntil?: (p: Promise<unknown>) => void): void {
    if (this.#refreshing.has(key)) return
    const epoch = this.#epoch
    const job = (async () => {
      try {
        const made = await toEntry(await render(), page, this.#now())
        if (made === undefined) {
          this.#logger.warn(
            `[svc] page ${page.path}: background render of ${key} was not cacheable (status or headers); keeping the stale entry`,
          )
        } else if (epoch === this.#epoch) {
          await this.store.set(key, made)
        }
      } catch (error) {
        // Keep serving the stale entry; the next stale hit tries again.
        this.#logger.error(`[svc] page ${page.path}: background render of ${key} failed:`, error)
      } finally {
        this.#refreshing.delete(key)
      }
    })()
    this.#refreshing.set(key, job)
    waitUntil?.(job)
  }

  /** Resolves when every background render has settled (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#refreshing.size > 0) await Promise.all(this.#refreshing.values())
  }

  /**
   * Deletes the entries of `paths` (every query variant of each) and of
   * pages carrying any of `tags`. Resolves to the keys removed.
   */
  async purge(paths: readonly string[], tags: readonly string[]): Promise<string[]> {
    this.#epoch++
    const wantedPaths = new Set(paths.map(canonicalKey))
    const wantedTags = new Set(tags)
    const purged: string[] = []
    for (const key of [...(await this.store.keys())]) {
      let hit = wantedPaths.size > 0 && (wantedPaths.has(canonicalKey(key)) || wantedPaths.has(canonicalKey(key.split('?', 1)[0])))
      if (!hit && wantedTags.size > 0) {
        const entry = await this.store.get(key)
        hit = entry?.tags.some((tag) => wantedTags.has(tag)) ?? false
      }
      if (hit && (await this.store.delete(key))) purged.push(key)
    }
    return purged
  }
}

/**
 * One spelling per URL, so a purge finds a key however either side escapes
 * it: keys come from request URLs (`/blog/caf%C3%A9`), purges as written
 * (`/blog/café`), and `%61` and `a` name the same segment (RFC 3986 §6.2.2).
 * Each path segment is decoded and encoded again, which keeps an escaped
 * slash inside its segment; a trailing slash is dropped; the query is
 * escaped the way the URL parser escapes it in request URLs.
 */
function canonicalKey(key: string): string {
  let url: URL
  try {
    // Concatenated, not resolved against a base: `//x` stays a path, never a host.
    url = new URL(`http://svc${key.startsWith('/') ? '' : '/'}${key}`)
  } catch {
    return key
  }
  let path = url.pathname
  if (path.length > 1) path = trimTrailingSlashes(path) || '/'
  const segments = path.split('/').map((segment) => {
    try {
      return encodeURIComponent(decodeURIComponent(segment))
    } catch {
      return segment
    }
  })
  return segments.join('/') + url.search
}

/**
 * Only plain successful responses are shared between visitors: a
 * `Set-Cookie` or a `private`/`no-store` directive marks a response as
 * meant for one client (RFC 9111 §5.2.2).
 */
async function toEntry(rendered: Rendered, page: PageCacheInfo, now: number): Promise<CacheEntry | undefined> {
  const base = { createdAt: now, revalidate: page.revalidate, tags: [...page.tags] }
  if (typeof rendered === 'string') {
    return { body: rendered, status: 200, headers: [['content-type', HTML_TYPE]], ...base }
  }
  if (rendered.status !== 200 || rendered.headers.has('set-cookie')) return undefined
  if (/\b(private|no-store)\b/i.test(rendered.headers.get('cache-control') ?? '')) return undefined
  const headers: [string, string][] = []
  rendered.headers.forEach((value, name) => {
    if (name !== 'content-length') headers.push([name, value])
  })
  return { body: new Uint8Array(await rendered.arrayBuffer()), status: 200, headers, ...base }
}

function fromEntry(entry: CacheEntry, state: 'HIT' | 'STALE' | 'MISS', ageMs: number, R: ResponseClass): Response {
  const headers = entry.headers.slice()
  headers.push(['x-svc-cache', state])
  // RFC 9111 §5.1: seconds since the stored response was generated.
  if (state !== 'MISS') headers.push(['age', String(Math.max(0, Math.floor(ageMs / 1000)))])
  return new R(entry.body as BodyInit, { status: entry.status, headers })
}
