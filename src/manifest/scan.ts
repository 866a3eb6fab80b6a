/**
 * Scans an app: every route under `src/api/` and page under `src/pages/`,
 * read without importing or evaluating any of it. Every error in every file
 * is collected; nothing stops at the first.
 */
import type { ManifestPage } from './types.ts'
import { ConfigError, compareConfigErrors } from './errors.ts'
import { EVENTS_FILES } from './events-file.ts'
import { API_DIR, PAGES_DIR, compareUrlPaths, isSourceFile } from './paths.ts'
import { openScanCache, scannerFingerprint } from './scan-cache.ts'
import type { FileScan } from './scan-file.ts'
import type { ScanFileOptions, ScanFileResult, ScanOptions, ScanResult, ScannedRoute } from './types.ts'
import { listSourceFiles } from './walk.ts'

// From process.getBuiltinModule() rather than `import`, which would load
// fs.promises and some thirty built-ins behind it at the start of every
// command that scans (see bin/svc.mjs).
const { existsSync, readFileSync } = process.getBuiltinModule('node:fs')
const { isAbsolute, relative, resolve, sep } = process.getBuiltinModule('node:path')

/**
 * Scans the app at `root`. Routes come back sorted by path, with
 * `file` relative to `root` (`src/api/users/[id].ts`), ready to import.
 */
export async function scanApp(options: ScanOptions): Promise<ScanResult> {
  const root = resolve(options.root)
  const cache = useCache(options) ? openScanCache(root, options.cacheFingerprint ?? scannerFingerprint()) : undefined
  const apiFiles = cache ? cache.list(API_DIR, listSourceFiles) : listSourceFiles(`${root}/${API_DIR}`)
  const pageFiles = cache ? cache.list(PAGES_DIR, listSourceFiles) : listSourceFiles(`${root}/${PAGES_DIR}`)

  // Files are read synchronously: for many small files fs.promises.readFile
  // costs several times the CPU (four thread-pool round trips per file), and
  // a scan is CPU-bound. One file at a time, from its text to its result:
  // each syntax tree is garbage before the next file is parsed (readSource
  // in parse.ts cuts it loose from the parser's result), so the collector
  // finds the young generation nearly empty, where starting every file at
  // once would keep every tree alive until the last one is parsed.
  //
  // The per-file scanner (scan-file.ts, the parser and some forty modules
  // behind it) is loaded on the first file the cache does not hold. A file
  // whose stat the cache holds is not even read.
  const scanOne = async <T>(file: string, scan: (file: string, text: string) => Promise<FileScan<T>>): Promise<FileScan<T>> => {
    const unchanged = cache?.unchanged<T>(file)
    if (unchanged) return unchanged
    const text = readFileSync(`${root}/${file}`, 'utf8')
    const hit = cache?.get<T>(file, text)
    if (hit) return hit
    const result = await scan(file, text)
    cache?.set(file, text, result)
    return result
  }
  const routeScans: FileScan<ScannedRoute>[] = []
  for (const name of apiFiles) {
    routeScans.push(await scanOne(`${API_DIR}/${name}`, async (file, text) => (await scanner()).scanRouteSource(file, text)))
  }
  const pageScans: FileScan<ManifestPage>[] = []
  for (const name of pageFiles) {
    pageScans.push(await scanOne(`${PAGES_DIR}/${name}`, async (file, text) => (await scanner()).scanPageSource(file, text)))
  }

  const eventFiles = EVENTS_FILES.filter((file) => existsSync(`${root}/${file}`))
  const eventsScan = eventFiles[0]
    ? await scanOne(eventFiles[0], async (file, text) => (await scanner()).scanEventsSource(file, text))
    : undefined

  const errors: ConfigError[] = [...(eventsScan?.errors ?? [])]
  if (eventFiles.length > 1) {
    errors.push(new ConfigError(eventFiles[1], 1, 1, `event schemas are declared by both ${eventFiles.join(' and ')}; keep one of them`))
  }
  const routes: ScannedRoute[] = []
  const pages: ManifestPage[] = []
  for (const scan of routeScans) {
    errors.push(...scan.errors)
    if (scan.value) routes.push(scan.value)
  }
  for (const scan of pageScans) {
    errors.push(...scan.errors)
    if (scan.value) pages.push(scan.value)
  }

  const byPath = (a: { path: string; file: string }, b: { path: string; file: string }) =>
    compareUrlPaths(a.path, b.path) || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
  routes.sort(byPath)
  pages.sort(byPath)
  cache?.save([...routes, ...pages, ...(eventsScan?.value ? [eventsScan.value] : [])].map((item) => item.file))
  errors.push(...findDuplicates(routes, (r) => r.path, 'URL', urlShape), ...findDuplicates(pages, (p) => p.path, 'URL', urlShape))
  errors.push(
    ...findDuplicates(
      routes.filter((r) => r.name !== null),
      (r) => r.name!,
      'task name',
    ),
  )
  errors.sort(compareConfigErrors)
  const result: ScanResult = { root, routes, pages, errors }
  if (eventsScan?.value) result.events = eventsScan.value
  return result
}

/** `options.cache`, else `SVC_SCAN_CACHE=1` turns the cache on (the CLI sets it unless it is 0). */
function useCache(options: ScanOptions): boolean {
  return options.cache ?? process.env.SVC_SCAN_CACHE === '1'
}

// Loaded on the first file the cache does not hold, then kept: an import()
// per file resolves the specifier again each time.
let scanFileModule: typeof import('./scan-file.ts') | undefined
const scanner = async () => (scanFileModule ??= await import('./scan-file.ts'))

/**
 * Two files with one URL (`users.ts` and `users/index.ts`), or two tasks with
 * one name (`jobs/notify.ts` and `jobs.notify.ts`): an error on the second
 * file that names both. `same` maps a label to what makes two of them the
 * same (by default the label itself).
 */
function findDuplicates<T extends { file: string }>(
  items: T[],
  label: (item: T) => string,
  what: string,
  same: (label: string) => string = (l) => l,
): ConfigError[] {
  const first = new Map<string, T>()
  const errors: ConfigError[] = []
  for (const item of items) {
    const k = same(label(item))
    const earlier = first.get(k)
    if (!earlier) {
      first.set(k, item)
      continue
    }
    const [a, b] = earlier.file < item.file ? [earlier, item] : [item, earlier]
    const shown = label(a) === label(b) ? label(b) : `${label(b)} (as ${label(a)})`
    errors.push(new ConfigError(b.file, 1, 1, `${what} ${shown} is declared by both ${a.file} and ${b.file}; rename or remove one of them`))
  }
  return errors
}

/**
 * A URL pattern without its parameter names: `/users/:id` and `/users/:slug`
 * match the same requests, so they are one URL (a catch-all stays distinct
 * from a single parameter).
 */
function urlShape(path: string): string {
  // Most paths have no parameter: the regular expression is skipped for them.
  return path.includes('/:') ? path.replace(/\/:[^/]*?(\*?)(?=\/|$)/g, '/:$1') : path
}

/**
 * Re-checks one file, as a dev server does on each change. Rules that span
 * files (duplicate URLs and task names) need a full `scanApp`.
 */
export async function scanFile(options: ScanFileOptions): Promise<ScanFileResult> {
  const root = resolve(options.root)
  const absolute = isAbsolute(options.file) ? options.file : resolve(root, options.file)
  const file = relative(root, absolute).split(sep).join('/')
  const name = file.slice(file.lastIndexOf('/') + 1)
  const area = file.startsWith(`${API_DIR}/`) ? API_DIR : file.startsWith(`${PAGES_DIR}/`) ? PAGES_DIR : null
  const inPrivateFolder = file
    .split('/')
    .slice(0, -1)
    .some((part) => part.startsWith('_') || part.startsWith('.'))
  if (area === null || inPrivateFolder || !isSourceFile(name)) return { route: null, page: null, errors: [] }

  // Synchronous, as in scanApp: node:fs/promises alone adds a dozen built-in
  // modules to the start of every command that scans.
  const source = options.source ?? readFileSync(absolute, 'utf8')
  const { scanPageSource, scanRouteSource } = await scanner()
  if (area === API_DIR) {
    const scan = await scanRouteSource(file, source)
    return { route: scan.value, page: null, errors: scan.errors }
  }
  const scan = await scanPageSource(file, source)
  return { route: null, page: scan.value, errors: scan.errors }
}
