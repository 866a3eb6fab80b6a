/**
 * A persistent cache of per-file scan results, in `<root>/.svc/scan-cache.json`.
 * A file's result is a pure function of its path and text (see scan-file.ts)
 * and of the scanner's own code, so an entry is reused when the cache's format
 * and scanner fingerprint match and the file's text hashes the same.
 *
 * The text is read only when the file's stat changed: an entry also keeps
 * the size, modification and change times and inode number the file had
 * when it was hashed, and a file that still has them is not read at all.
 * Likewise the list of files comes from the cache while no folder walked for
 * it has changed (a folder's times change when an entry is added, removed or
 * renamed in it). A stat is kept only once it has settled, older than the
 * scan by SETTLE_MS: a file edited again within the granularity of the file
 * system's clock keeps its times, and is read and hashed until they are old.
 * Any change, `touch` or `utimes` included, moves the change time, which no
 * program can set.
 *
 * The cache is a speed-up only: one that is missing, unreadable, corrupt,
 * from another scanner or in a folder that cannot be written is ignored, and
 * never changes a result. `SVC_DEBUG=1` prints why one was ignored.
 */
import { ConfigError } from './errors.ts'
import type { FileScan } from './scan-file.ts'
import { PACKAGE_NAME } from '../runtime/package-name.ts'

// Not `import`: see the note in scan.ts.
const { readFileSync, writeFileSync, renameSync, mkdirSync, statSync, readdirSync, rmSync } = process.getBuiltinModule('node:fs')
const { dirname, join, sep } = process.getBuiltinModule('node:path')

/** Bumped whenever the layout of the cache file changes. */
const FORMAT = 3
/**
 * A cache longer than this (in UTF-16 code units, about bytes for this mostly
 * ASCII JSON) is not written: some 70,000 routes at about 1 KB each, past which reading it back
 * and holding it in memory costs more than it saves.
 */
const MAX_LENGTH = 64 * 1024 * 1024
/**
 * How much older than the scan a file's or folder's times must be for its
 * stat to stand for its content: more than the granularity of any local
 * file system's times (2 s on FAT) and the lag of the kernel's coarse clock.
 */
export const SETTLE_MS = 3_000

interface StoredError {
  file: string
  line: number
  column: number
  message: string
}

interface Entry {
  /** Hash of the file's text. */
  text: string
  /** The file's settled stat when its text had that hash (see statKey), if it had settled. */
  stat?: string
  value: unknown
  errors: StoredError[]
}

interface CacheFile {
  format: number
  fingerprint: string
  /** The settled stat of every folder walked, by path relative to the root (a missing one too). */
  dirs: Record<string, string>
  entries: Record<string, Entry>
}

export interface ScanCache {
  /**
   * The source files under `dir` (relative to the root), as `walk` lists
   * them, which is called only when a folder under `dir` changed since the
   * cache was written; `walk` passes each folder to `visit` before reading it.
   */
  list(dir: string, walk: (dir: string, visit: (dir: string) => void) => string[]): string[]
  /** The cached result for `file` when its stat is the one cached with it, or undefined: then read it and call get(). */
  unchanged<T>(file: string): FileScan<T> | undefined
  /** The cached result for `file` with this text, or undefined. */
  get<T>(file: string, text: string): FileScan<T> | undefined
  /** Records a fresh result; every file scanned in this run is kept on save, every other one dropped. */
  set<T>(file: string, text: string, scan: FileScan<T>): void
  /**
   * Writes the cache back when anything changed (atomically: a temporary
   * file, then a rename), with the entries of `order` first, in that order.
   */
  save(order?: string[]): void
}

/** Opens the cache of the app at `root` for a scanner whose code has `fingerprint`. */
export function openScanCache(root: string, fingerprint: string): ScanCache {
  const dir = `${root}/.svc`
  const path = `${dir}/scan-cache.json`
  // Times at or after this are too recent to stand for content (see SETTLE_MS).
  const settledBefore = Date.now() - SETTLE_MS
  const previous = readCache(path, fingerprint)
  const entries: Record<string, Entry> = {}
  const dirs: Record<string, string> = {}
  let changed = false
  // The stat of the file unchanged() last looked at, for get() and set() on a miss.
  let current: { file: string; stat: string | undefined } | undefined
  // A miss hashes the text in get() and again in set(): the second time is answered from here.
  let last: { text: string; hash: string } | undefined
  const textHash = (text: string) => {
    if (last?.text !== text) last = { text, hash: `${text.length}:${hash53(text)}` }
    return last.hash
  }
  const statOf = (file: string) => (current?.file === file ? current.stat : undefined)
  const revive = <T>(entry: Entry): FileScan<T> => ({
    value: entry.value as T | null,
    errors: entry.errors.length === 0 ? NO_ERRORS : entry.errors.map(reviveError),
  })

  return {
    list(area, walk) {
      const recorded = previous && Object.keys(previous.dirs).filter((name) => name === area || name.startsWith(`${area}/`))
      if (recorded?.length && recorded.every((name) => settledStat(`${root}/${name}`, settledBefore) === previous!.dirs[name])) {
        for (const name of recorded) dirs[name] = previous!.dirs[name]
        // In the order of the last scan's result (see save()), not sorted by name.
        const prefix = `${area}/`
        return Object.keys(previous!.entries)
          .filter((file) => file.startsWith(prefix))
          .map((file) => file.slice(prefix.length))
      }
      // A folder that has not settled could still change unseen: none of this area's is kept.
      const walked: Record<string, string> = {}
      let settled = true
      const files = walk(`${root}/${area}`, (folder) => {
        const stat = settledStat(folder, settledBefore)
        if (stat === undefined) settled = false
        else walked[folder.slice(root.length + 1)] = stat
      })
      const kept = settled ? walked : {}
      Object.assign(dirs, kept)
      for (const name of recorded ?? []) if (kept[name] !== previous!.dirs[name]) changed = true
      for (const name in kept) if (previous?.dirs[name] !== kept[name]) changed = true
      return files
    },
    unchanged<T>(file: string): FileScan<T> | undefined {
      const stat = settledStat(`${root}/${file}`, settledBefore)
      current = { file, stat }
      const entry = previous?.entries[file]
      if (!entry || stat === undefined || entry.stat !== stat) return undefined
      entries[file] = entry
      return revive(entry)
    },
    get<T>(file: string, text: string): FileScan<T> | undefined {
      const entry = previous?.entries[file]
      if (!entry || entry.text !== textHash(text)) return undefined
      const stat = statOf(file)
      // Kept with its new stat, so that the next scan need not read the file.
      if (stat !== entry.stat) changed = true
      entries[file] = stat === entry.stat ? entry : { ...entry, stat }
      return revive(entry)
    },
    set<T>(file: string, text: string, scan: FileScan<T>): void {
      entries[file] = { text: textHash(text), stat: statOf(file), value: scan.value, errors: scan.errors.map((error) => error.toJSON()) }
      changed = true
    },
    save(order = []): void {
      // Entries of files that are gone (deleted, renamed) are left out of `entries`.
      if (!changed && previous && Object.keys(previous.entries).length === Object.keys(entries).length) return
      // Kept in the order of the scan's result: a scan answered from the
      // cache then reads its routes in order, and sorting them costs a
      // comparison per route instead of some ten.
      const ordered: Record<string, Entry> = {}
      for (const file of order) if (file in entries) ordered[file] = entries[file]
      const body = JSON.stringify({ format: FORMAT, fingerprint, dirs, entries: Object.assign(ordered, entries) } satisfies CacheFile)
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

/**
 * The size, modification and change times and inode number of `path`
 * ("missing" when it does not exist), or undefined when they are too recent
 * to stand for its content, or it cannot be read.
 */
function settledStat(path: string, settledBefore: number): string | undefined {
  let stat: import('node:fs').Stats | undefined
  try {
    stat = statSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
  if (stat === undefined) return 'missing'
  if (stat.mtimeMs >= settledBefore || stat.ctimeMs >= settledBefore) return undefined
  return `${stat.size} ${stat.mtimeMs} ${stat.ctimeMs} ${stat.ino}`
}

function readCache(path: string, fingerprint: string): CacheFile | undefined {
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
    if (typeof data.dirs !== 'object' || data.dirs === null) return debug('ignored: it has no folders')
    for (const entry of Object.values(data.entries)) {
      if (typeof entry?.text !== 'string' || !Array.isArray(entry.errors)) return debug('ignored: an entry is malformed')
    }
    return data
  } catch (error) {
    return debug(`ignored: ${(error as Error).message}`)
  }
}

// Shared by every entry without errors: a scan only reads a FileScan's errors.
const NO_ERRORS: ConfigError[] = Object.freeze([]) as unknown as ConfigError[]

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
  // Paths as strings rather than URLs: this runs at the start of every
  // command that scans, where each URL is several objects to parse and keep.
  const here = import.meta.dirname
  // The scanner is src/manifest/ and the runtime rules it shares (route kinds, cron, flow).
  const files = import.meta.filename.endsWith('.ts')
    ? [...sourceFiles(here), ...sourceFiles(join(here, '../runtime'))]
    : [import.meta.filename]
  return fingerprintOf(files, [packageVersion(here), parserVersion(here)], `${dirname(here)}${sep}`)
}

/**
 * Each file's path (after `base`), size and modification time, and `parts`,
 * one a line. A file that cannot be read counts as missing. Kept as it is
 * rather than hashed: a few kilobytes compare faster than a start-up's
 * interpreted code hashes them.
 */
export function fingerprintOf(files: string[], parts: string[] = [], base = ''): string {
  const lines = [...parts]
  for (const file of files) {
    const name = file.startsWith(base) ? file.slice(base.length) : file
    try {
      const stat = statSync(file)
      lines.push(`${name} ${stat.size} ${stat.mtimeMs}`)
    } catch {
      lines.push(`${name} missing`)
    }
  }
  return lines.join('\n')
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
function sourceFiles(dir: string, out: string[] = []): string[] {
  let entries: import('node:fs').Dirent[]
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const entry of entries) {
    if (entry.isDirectory()) sourceFiles(join(dir, entry.name), out)
    else if (entry.name.endsWith('.ts')) out.push(join(dir, entry.name))
  }
  return out
}

function packageVersion(from: string): string {
  for (const candidate of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(join(from, candidate), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === PACKAGE_NAME) return `svc ${pkg.version}`
    } catch {}
  }
  return 'svc unknown'
}

/**
 * The parser's version, from the package.json of the oxc-parser that Node
 * resolves from `from`: the nearest `node_modules/oxc-parser` above it.
 * Looked up directly: import.meta.resolve() costs several milliseconds of
 * every scan's start.
 */
function parserVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'node_modules/oxc-parser/package.json'), 'utf8')) as { version?: string }
      return `oxc-parser ${pkg.version}`
    } catch {}
    if (dirname(dir) === dir) return 'oxc-parser unknown'
  }
}
