/**
 * A persistent cache of per-file scan results, in `<root>/.svc/scan-cache.json`.
 * A file's result is a pure function of its path and text (see scan-file.ts)
 * and of the scanner's own code, so an entry is reused when the cache's format
 * and scanner fingerprint match and the file's text hashes the same.
 *
 * The cache is a speed-up only: one that is missing, unreadable, corrupt,
 * from another scanner or in a folder that cannot be written is ignored, and
 * never changes a result. `SVC_DEBUG=1` prints why one was ignored.
 */
import { ConfigError } from './errors.ts'
import type { FileScan } from './scan-file.ts'

// Not `import`: see the note in scan.ts.
const { readFileSync, writeFileSync, renameSync, mkdirSync, statSync, readdirSync, rmSync } = process.getBuiltinModule('node:fs')

/** Bumped whenever the layout of the cache file changes. */
const FORMAT = 1
/**
 * A cache longer than this (in UTF-16 code units, about bytes for this mostly
 * ASCII JSON) is not written: some 70,000 routes at about 1 KB each, past which reading it back
 * and holding it in memory costs more than it saves.
 */
const MAX_LENGTH = 64 * 1024 * 1024

interface StoredError {
  file: string
  line: number
  column: number
  message: string
}

interface Entry {
  /** Hash of the file's text. */
  text: string
  value: unknown
  errors: StoredError[]
}

interface CacheFile {
  format: number
  fingerprint: string
  entries: Record<string, Entry>
}

export interface ScanCache {
  /** The cached result for `file` with this text, or undefined. */
  get<T>(file: string, text: string): FileScan<T> | undefined
  /** Records a fresh result; every file scanned in this run is kept on save, every other one dropped. */
  set<T>(file: string, text: string, scan: FileScan<T>): void
  /** Writes the cache back when anything changed (atomically: a temporary file, then a rename). */
  save(): void
}

/** Opens the cache of the app at `root` for a scanner whose code has `fingerprint`. */
export function openScanCache(root: string, fingerprint: string): ScanCache {
  const dir = `${root}/.svc`
  const path = `${dir}/scan-cache.json`
  const previous = readCache(path, fingerprint)
  const next: Record<string, Entry> = {}
  let changed = false
  // A miss hashes the text in get() and again in set(): the second time is answered from here.
  let last: { text: string; hash: string } | undefined
  const textHash = (text: string) => {
    if (last?.text !== text) last = { text, hash: `${text.length}:${hash53(text)}` }
    return last.hash
  }

  return {
    get<T>(file: string, text: string): FileScan<T> | undefined {
      const entry = previous?.[file]
      if (!entry || entry.text !== textHash(text)) return undefined
      next[file] = entry
      return { value: entry.value as T | null, errors: entry.errors.map(reviveError) }
    },
    set<T>(file: string, text: string, scan: FileScan<T>): void {
      next[file] = { text: textHash(text), value: scan.value, errors: scan.errors.map((error) => error.toJSON()) }
      changed = true
    },
    save(): void {
      // Entries of files that are gone (deleted, renamed) are left out of `next`.
      if (!changed && previous && Object.keys(previous).length === Object.keys(next).length) return
      const body = JSON.stringify({ format: FORMAT, fingerprint, entries: next } satisfies CacheFile)
      if (body.length > MAX_LENGTH) {
        debug(`not written: it would be ${body.length} characters long, over ${MAX_LENGTH}`)
        return
      }
      const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
      try {
        mkdirSync(dir, { recursive: true })
        writeFileSync(temporary, body)
        renameSync(temporary, path)
      } catch (error) {
        debug(`not written (${(error as Error).message})`)
        try {
          rmSync(temporary, { force: true })
        } catch {}
      }
    },
  }
}

function readCache(path: string, fingerprint: string): Record<string, Entry> | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return undefined // no cache yet, or none readable: a full scan
  }
  try {
    const data = JSON.parse(text) as CacheFile
    if (data?.format !== FORMAT || data.fingerprint !== fingerprint) return debug('ignored: written by another scanner version')
    if (typeof data.entries !== 'object' || data.entries === null) return debug('ignored: it has no entries')
    for (const entry of Object.values(data.entries)) {
      if (typeof entry?.text !== 'string' || !Array.isArray(entry.errors)) return debug('ignored: an entry is malformed')
    }
    return data.entries
  } catch (error) {
    return debug(`ignored: ${(error as Error).message}`)
  }
}

function reviveError(error: StoredError): ConfigError {
  return new ConfigError(error.file, error.line, error.column, error.message)
}

function debug(note: string): undefined {
  if (process.env.SVC_DEBUG) process.stderr.write(`svc: scan cache ${note}\n`)
  return undefined
}

/**
 * What the scanner's results depend on besides the files it reads: the svc
 * and parser versions, and the size and modification time of every module of
 * the scanner. A checkout runs the CLI from its TypeScript sources, so an
 * edit under `src/manifest/` (or the runtime rules it shares) changes the
 * fingerprint and with it every cached result; a built package is one bundle
 * file, whose own size and time stand for its code.
 */
export function scannerFingerprint(): string {
  const here = new URL('.', import.meta.url)
  // The scanner is src/manifest/ and the runtime rules it shares (route kinds, cron, flow).
  const files = import.meta.url.endsWith('.ts')
    ? [...sourceFiles(here), ...sourceFiles(new URL('../runtime/', here))]
    : [new URL(import.meta.url)]
  return fingerprintOf(
    files.map((url) => decodeURIComponent(url.pathname)),
    [packageVersion(here), parserVersion()],
  )
}

/** A hash of each file's path, size and modification time, and of `parts`. A file that cannot be read counts as missing. */
export function fingerprintOf(files: string[], parts: string[] = []): string {
  const lines = [...parts]
  for (const file of files) {
    try {
      const stat = statSync(file)
      lines.push(`${file} ${stat.size} ${stat.mtimeMs}`)
    } catch {
      lines.push(`${file} missing`)
    }
  }
  return hash53(lines.join('\n'))
}

/**
 * A 53-bit hash of a string (cyrb53, public domain), in base 36. node:crypto
 * would cost some 10 ms to start, more than a small app's cached scan; the
 * cache needs a hash that tells edits apart, not one that resists forgery.
 */
function hash53(text: string): string {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

/** The TypeScript files under `dir`, at any depth. */
function sourceFiles(dir: URL, out: URL[] = []): URL[] {
  let entries: import('node:fs').Dirent[]
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const entry of entries) {
    if (entry.isDirectory()) sourceFiles(new URL(`${entry.name}/`, dir), out)
    else if (entry.name.endsWith('.ts')) out.push(new URL(entry.name, dir))
  }
  return out
}

function packageVersion(from: URL): string {
  for (const candidate of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, from), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'svc') return `svc ${pkg.version}`
    } catch {}
  }
  return 'svc unknown'
}

/** The parser's version, from the package.json above its entry module (which is resolved, not loaded). */
function parserVersion(): string {
  try {
    const entry = import.meta.resolve('oxc-parser')
    for (const candidate of ['../package.json', '../../package.json']) {
      try {
        const pkg = JSON.parse(readFileSync(new URL(candidate, entry), 'utf8')) as { name?: string; version?: string }
        if (pkg.name === 'oxc-parser') return `oxc-parser ${pkg.version}`
      } catch {}
    }
  } catch {}
  return 'oxc-parser unknown'
}
