/**
 * Scans one route, page or event schemas file: parse, read the static config, normalize it,
 * detect signals and advise. Pure over (path, text): the dev server re-runs it
 * on each change, and `scanApp` runs it for every file.
 */
import { HTTP_METHODS, type HttpMethod } from '../runtime/types.ts'
import { taskNameFromPath } from '../runtime/route-config.ts'
import { adviseRoute } from './advisor.ts'
import type { Node } from './ast.ts'
import { ConfigError, compareConfigErrors } from './errors.ts'
import { type Locator, createLocator } from './location.ts'
import { type ManifestEvents, readEventSchemaNames } from './events-file.ts'
import { readExports } from './module-exports.ts'
import { reportTaskHandlers } from './not-a-task.ts'
import { readPageConfig } from './page.ts'
import { SOURCE_LANG, readSource } from './parse.ts'
import { API_DIR, PAGES_DIR, sourceExtension, urlFromFile } from './paths.ts'
import type { Reporter } from './reporter.ts'
import { readRouteConfig } from './route-config.ts'
import { detectSignals } from './signals.ts'
import type { ManifestPage, ScannedRoute } from './types.ts'

export interface FileScan<T> {
  value: T | null
  errors: ConfigError[]
}

interface Context {
  file: string
  source: string
  errors: ConfigError[]
  warnings: string[]
  report: Reporter
  locate: Locator
  at: (offset: number, message: string) => void
}

function createContext(file: string, source: string): Context {
  const locate = createLocator(source)
  const errors: ConfigError[] = []
  const warnings: string[] = []
  const at = (offset: number, message: string) => {
    const { line, column } = locate(offset)
    errors.push(new ConfigError(file, line, column, message))
  }
  return {
    file,
    source,
    errors,
    warnings,
    locate,
    at,
    report: { error: (node: Node, message) => at(node.start, message), warn: (message) => warnings.push(message) },
  }
}

/**
 * Scans an API route. `file` is relative to the app root with `/`
 * separators and lies under `src/api/`.
 */
export async function scanRouteSource(file: string, text: string): Promise<FileScan<ScannedRoute>> {
  const source = withoutBom(text)
  const ctx = createContext(file, source)
  const route = await mapAndRead(ctx, file, source, API_DIR, '/api', (program, path) => readRoute(ctx, program, path))
  return { value: route, errors: ctx.errors.sort(compareConfigErrors) }
}

/** The route a file's syntax tree declares at `path`; problems go to `ctx`. */
function readRoute(ctx: Context, program: Node, path: string): ScannedRoute {
  const { file, source } = ctx
  const exports = readExports(program, source)
  const config = readRouteConfig(exports, source, ctx.report)
  const methods = HTTP_METHODS.filter((method) => exports.names.has(method))
  const websocket = exports.names.has('websocket')
  if (config.notATask) reportTaskHandlers(program, exports, path, config.notATask, ctx.report)

  let name: string | null = null
  if (config.kind === 'task') {
    name = taskNameFromPath(path)
    if (path.includes(':')) {
      ctx.at(
        0,
        `task routes cannot have path parameters (${path}): a task is called by name, not by URL; rename the file without [brackets]`,
      )
    } else if (name === '') {
      ctx.at(0, `a task needs a name, and ${file} maps to /api itself; move it to a file such as ${API_DIR}/report.ts`)
    }
    if (!methods.includes('POST')) ctx.warnings.push('task routes run their POST export, and this file has none')
    const served = methods.filter((m) => m !== 'POST')
    if (served.length > 0)
      ctx.warnings.push(`tasks are not HTTP endpoints, so ${served.join(', ')} ${served.length === 1 ? 'is' : 'are'} never served`)
    if (websocket) ctx.warnings.push('tasks are not HTTP endpoints, so the websocket export is never served; move it to a hot route')
  } else if (config.kind === 'serverless') {
    if (websocket && config.explicitServerless) {
      ctx.warnings.push(`route.kind 'serverless' turns off the websocket export; remove it so the route is hot`)
    } else if (methods.length === 0) {
      ctx.warnings.push(`exports no HTTP method handler (${HTTP_METHODS.join(', ')}), so no request reaches it`)
    }
  }
  for (const star of exports.starExports) {
    ctx.warnings.push(`export * from '${star.source.value}' is not followed: handlers or config it provides are not in the manifest`)
  }

  const { signals, imports } = detectSignals(program, source, exports, ctx.locate)
  const compute = config.compute
  const route: ScannedRoute = {
    path,
    file,
    kind: config.kind,
    name,
    methods: methods as HttpMethod[],
    websocket,
    schedule: config.kind === 'task' ? config.schedule : null,
    on: config.on,
    timezone: config.timezone,
    retries: config.retries,
    timeout: config.timeout,
    flow: config.flow,
    origins: config.origins,
    hasInput: exports.names.has('input'),
    hasSchema: exports.names.has('schema'),
    compute,
    provider: 'function-platform',
    confidence: 'high',
    reasons: [],
    warnings: ctx.warnings,
    signals,
    imports,
  }
  const advice = adviseRoute(route)
  route.provider = advice.provider
  route.confidence = advice.confidence
  route.reasons = [
    config.kindReason,
    config.computeDeclared
      ? `declares compute class ${compute.class}${compute.memory ? ` with ${compute.memory}` : ''}${compute.cpu ? ` and ${compute.cpu} CPU` : ''}`
      : config.kind === 'hot'
        ? 'hot routes default to compute class dedicated'
        : 'compute defaults to class function with 1gb',
    ...advice.reasons,
  ]
  if (advice.severity === 'warn' && advice.recommendation) route.warnings.push(`advisor: ${advice.recommendation}`)
  return route
}

/** Scans a page. `file` is relative to the app root and lies under `src/pages/`. */
export async function scanPageSource(file: string, text: string): Promise<FileScan<ManifestPage>> {
  const source = withoutBom(text)
  const ctx = createContext(file, source)
  const page = await mapAndRead(ctx, file, source, PAGES_DIR, '', (program, path) => ({
    path: path || '/',
    file,
    ...readPageConfig(readExports(program, source), source, ctx.report),
  }))
  return { value: page, errors: ctx.errors.sort(compareConfigErrors) }
}

/** Scans an app's event schemas (`events-file.ts`): `file` is relative to the app root. */
export async function scanEventsSource(file: string, text: string): Promise<FileScan<ManifestEvents>> {
  const source = withoutBom(text)
  const ctx = createContext(file, source)
  const outcome = await readSource(source, file, SOURCE_LANG[sourceExtension(file) ?? '.ts'], (program) =>
    readEventSchemaNames(readExports(program, source), ctx.report),
  )
  if (!outcome.ok) ctx.at(outcome.offset, outcome.message)
  const names = outcome.ok ? outcome.value : []
  return { value: ctx.errors.length === 0 ? { file, names } : null, errors: ctx.errors.sort(compareConfigErrors) }
}

/**
 * The text without a leading byte order mark. `readFile(…, 'utf8')` keeps it
 * as U+FEFF, but editors and tsc do not count it as a column, so positions
 * are computed from the text after it.
 */
function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/**
 * What `read` makes of the file's syntax tree and URL path, or null after
 * reporting why there is none (a file name that maps to no URL, a syntax
 * error).
 */
async function mapAndRead<T>(
  ctx: Context,
  file: string,
  source: string,
  dir: string,
  prefix: string,
  read: (program: Node, path: string) => T,
): Promise<T | null> {
  const mapping = urlFromFile(file.slice(dir.length + 1), prefix)
  if (!mapping.ok) {
    ctx.at(0, mapping.message)
    return null
  }
  const outcome = await readSource(source, file, SOURCE_LANG[sourceExtension(file) ?? '.ts'], (program) => read(program, mapping.path))
  if (!outcome.ok) {
    ctx.at(outcome.offset, outcome.message)
    return null
  }
  return outcome.value
}
