/**
 * The run store named by `SVC_STORE_URL` (docs/stores.md "Choosing a store"), so a
 * deployment picks where runs live without code. A value that names no store,
 * or a database that cannot be used, fails the start: falling back to memory
 * would lose runs the operator asked to keep.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { redactUrl } from '../runtime/redact.ts'
import { MemoryRunStore } from '../runtime/tasks/store/memory-store.ts'
import type { RunStore } from '../runtime/tasks/store/store.ts'
import type { SqliteRunStoreOptions } from '../sqlite/options.ts'
import { SqliteRunStore } from '../sqlite/store.ts'

export const STORE_URL_ENV = 'SVC_STORE_URL'

/** Where `defaultStore: 'sqlite'` keeps runs, under `root`. */
export const DEFAULT_SQLITE_PATH = '.svc/runs.db'

export interface StoreFromEnvOptions {
  /**
   * What relative SQLite paths, and the default SQLite file, are resolved against.
   * @default process.cwd()
   */
  root?: string
  /**
   * The store when `SVC_STORE_URL` is unset or empty: `'memory'`, or
   * `'sqlite'` for a file at `.svc/runs.db` under `root` (made if missing).
   */
  defaultStore: 'memory' | 'sqlite'
}

export interface StoreFromEnv {
  store: RunStore
  /** What the store is, for a log line (never the password of a URL). */
  description: string
  /** Closes the store; the caller opened it, so the caller closes it. */
  close(): Promise<void>
}

/** What a scheme's factory is given. */
interface SchemeInput {
  /** The whole value of `SVC_STORE_URL`, trimmed. */
  value: string
  /** The scheme as written in the value, lowercased. */
  scheme: string
  /** What follows `<scheme>:`; empty for a store named by a word alone. */
  rest: string
  /** What relative paths resolve against. */
  root: string
}

/** One kind of value of `SVC_STORE_URL`, and how it opens its store. */
interface StoreScheme {
  /** How the value is written, in the list of accepted values. */
  form: string
  /** Named by this word alone, exactly (`memory`), rather than by a `<scheme>:` prefix. */
  word?: true
  open(input: SchemeInput): StoreFromEnv | Promise<StoreFromEnv>
}

/**
 * Every value `SVC_STORE_URL` accepts, by scheme, in the order the error
 * lists them. A new store is one entry here; a factory that needs a driver
 * imports it when it is called, so `svcjs/node` loads none it does not use.
 * Schemes are case-insensitive (RFC 3986, section 3.1).
 */
const SCHEMES: ReadonlyMap<string, StoreScheme> = new Map<string, StoreScheme>([
  ['postgres', { form: 'postgres://…', open: ({ value }) => openPostgres(value) }],
  ['postgresql', { form: 'postgresql://…', open: ({ value }) => openPostgres(value) }],
  ['sqlite', { form: 'sqlite:<path>[?shared]', open: openSqliteUrl }],
  ['file', { form: 'file:<path>[?shared]', open: openSqliteUrl }],
  ['memory', { form: 'memory', word: true, open: memory }],
])

/** Every form `SVC_STORE_URL` accepts, for its errors. A function, so that a bundle that never opens a store leaves the stores out. */
function accepted(): string {
  const forms = Array.from(SCHEMES.values(), (scheme) => scheme.form)
  return `${forms.slice(0, -1).join(', ')} or ${forms.at(-1)}`
}

/**
 * Opens the store `env.SVC_STORE_URL` names, or the default. A Postgres store
 * is ready (tables made, database reached) when this resolves; the driver is
 * loaded only then, so `svcjs/node` does not load it otherwise.
 */
export async function storeFromEnv(env: Record<string, string | undefined>, options: StoreFromEnvOptions): Promise<StoreFromEnv> {
  const root = resolve(options.root ?? process.cwd())
  const value = env[STORE_URL_ENV]?.trim()
  if (!value) {
    if (options.defaultStore === 'sqlite') return openSqlite(resolve(root, DEFAULT_SQLITE_PATH))
    if (options.defaultStore === 'memory') return memory()
    throw new TypeError(`storeFromEnv(): defaultStore must be 'memory' or 'sqlite' (got ${JSON.stringify(options.defaultStore)})`)
  }
  const named = schemeOf(value)
  if (!named) throw new TypeError(`${STORE_URL_ENV} must be one of ${accepted()} (got ${JSON.stringify(redactUrl(value))})`)
  return named.store.open({ value, scheme: named.scheme, rest: named.rest, root })
}

/** The entry of `SCHEMES` that `value` names, with its scheme and what follows it. */
function schemeOf(value: string): { store: StoreScheme; scheme: string; rest: string } | undefined {
  const prefix = /^([a-z][a-z0-9+.-]*):/i.exec(value)
  if (!prefix) {
    const store = SCHEMES.get(value)
    return store?.word ? { store, scheme: value, rest: '' } : undefined
  }
  const scheme = prefix[1].toLowerCase()
  const store = SCHEMES.get(scheme)
  return store && !store.word ? { store, scheme, rest: value.slice(prefix[0].length) } : undefined
}

function openSqliteUrl({ value, scheme, rest, root }: SchemeInput): StoreFromEnv {
  const query = rest.indexOf('?')
  const path = sqlitePath(query < 0 ? rest : rest.slice(0, query))
  if (!path)
    throw new TypeError(
      `${STORE_URL_ENV} must name a file after "${scheme}:" (got ${JSON.stringify(redactUrl(value))}); accepted: ${accepted()}`,
    )
  return openSqlite(resolve(root, path), query < 0 ? {} : sqliteParams(rest.slice(query + 1)))
}

/** The SQLite store's options a URL's query may set: a number each, but `shared`. */
const SQLITE_PARAMS = ['shared', 'leaseMs', 'pollMs', 'busyTimeoutMs', 'maxRuns'] as const

/**
 * `?shared` (or `shared=true`, `=1`; `=false`, `=0` for off), and the
 * numeric options by name (`?shared&leaseMs=10000`). Anything else is an
 * error: a misspelt `?shard` must not open a file that shares nothing.
 */
function sqliteParams(query: string): Omit<SqliteRunStoreOptions, 'path'> {
  const options: Record<string, boolean | number> = {}
  for (const [name, raw] of new URLSearchParams(query)) {
    if (!(SQLITE_PARAMS as readonly string[]).includes(name)) {
      throw new TypeError(`${STORE_URL_ENV}: unknown SQLite option "${name}"; accepted: ${SQLITE_PARAMS.join(', ')}`)
    }
    if (name === 'shared') {
      const on = ['', 'true', '1'].includes(raw)
      if (!on && !['false', '0'].includes(raw)) throw new TypeError(`${STORE_URL_ENV}: shared must be true, false, 1 or 0 (got "${raw}")`)
      options.shared = on
      continue
    }
    // The store checks the number itself, naming the option.
    options[name] = raw.trim() === '' ? Number.NaN : Number(raw)
  }
  return options
}

/** `sqlite:data/runs.db`, `sqlite:/abs/runs.db`, and `file:` URLs (`file:///abs/runs.db`) alike. */
function sqlitePath(rest: string): string {
  if (rest.startsWith('//')) {
    // A URL with an authority: file:///abs/path (RFC 8089); its path is percent-encoded.
    const path = rest.replace(/^\/\/[^/]*/, '')
    return path === '' ? '' : decodeURIComponent(path)
  }
  return rest
}

function memory(): StoreFromEnv {
  const store = new MemoryRunStore()
  return { store, description: 'memory', close: () => store.close() }
}

function openSqlite(path: string, options: Omit<SqliteRunStoreOptions, 'path'> = {}): StoreFromEnv {
  try {
    mkdirSync(dirname(path), { recursive: true })
    const store = new SqliteRunStore({ path, ...options })
    const description = `SQLite ${path}${options.shared ? ' (shared by processes)' : ''}`
    return { store, description, close: () => store.close() }
  } catch (error) {
    throw new Error(`${STORE_URL_ENV}: cannot open the SQLite run store at ${path}: ${(error as Error).message}`, { cause: error })
  }
}

async function openPostgres(url: string): Promise<StoreFromEnv> {
  const { PostgresRunStore } = await import('../postgres.ts')
  let store: InstanceType<typeof PostgresRunStore>
  try {
    store = new PostgresRunStore({ url })
  } catch (error) {
    throw new TypeError(`${STORE_URL_ENV}: ${(error as Error).message}`, { cause: error })
  }
  try {
    await store.ready()
  } catch (error) {
    await store.close().catch(() => {})
    throw new Error(
      `${STORE_URL_ENV}: the Postgres run store cannot start: ${(error as Error).message}. ` +
        `Check that the database is up and reachable, or set ${STORE_URL_ENV} to another store.`,
      { cause: error },
    )
  }
  return { store, description: `Postgres ${redactUrl(url)}`, close: () => store.close() }
}
