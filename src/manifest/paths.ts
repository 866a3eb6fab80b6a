/**
 * File-system routing: which files are routes, and the URL pattern and task
 * name each one maps to.
 *
 * - `index` names its folder: `src/api/index.ts` is `/api`, `users/index.ts` is `/api/users`.
 * - `[id]` is a parameter, written `:id`.
 * - `[...rest]` is a catch-all parameter named `rest`, written `:rest*`; it must come last.
 * - `(group)` folders organise files without appearing in the URL.
 */
import { SOURCE_LANG } from './parse.ts'

/** Where API routes live, relative to the app root. */
export const API_DIR = 'src/api'
/** Where pages live, relative to the app root. */
export const PAGES_DIR = 'src/pages'

const PARAM = /^\[([A-Za-z_$][\w$]*)\]$/
const CATCH_ALL = /^\[\.\.\.([A-Za-z_$][\w$]*)\]$/
const GROUP = /^\([^()/]+\)$/

/** Whether a file name (not a path) is a route or page source file. */
export function isSourceFile(name: string): boolean {
  if (name.startsWith('_')) return false
  if (name.endsWith('.d.ts') || name.endsWith('.d.mts')) return false
  if (/\.(test|spec)\./.test(name)) return false
  return sourceExtension(name) !== undefined
}

/** The file's scanned extension (`.ts`, `.mts`, `.js`, `.mjs`), if it has one. */
export function sourceExtension(name: string): string | undefined {
  const dot = name.lastIndexOf('.')
  if (dot <= 0) return undefined
  const ext = name.slice(dot)
  return ext in SOURCE_LANG ? ext : undefined
}

export type UrlMapping = { ok: true; path: string } | { ok: false; message: string }

/**
 * The URL pattern of a file, given its path relative to the routes folder
 * (`users/[id].ts`) and the URL prefix (`/api`, or `` for pages).
 */
export function urlFromFile(relative: string, prefix: string): UrlMapping {
  const segments = relative.split('/')
  const last = segments.length - 1
  const ext = sourceExtension(segments[last]) ?? ''
  segments[last] = segments[last].slice(0, segments[last].length - ext.length)
  if (segments[last] === 'index') segments.pop()

  const parts: string[] = []
  const params = new Set<string>()
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]
    if (GROUP.test(segment)) continue
    let match = CATCH_ALL.exec(segment)
    if (match) {
      if (i !== segments.length - 1) {
        return { ok: false, message: `catch-all segment ${segment} must be the last part of the path` }
      }
      if (params.has(match[1])) return { ok: false, message: `parameter "${match[1]}" appears twice in the path` }
      params.add(match[1])
      parts.push(`:${match[1]}*`)
      continue
    }
    match = PARAM.exec(segment)
    if (match) {
      if (params.has(match[1])) return { ok: false, message: `parameter "${match[1]}" appears twice in the path` }
      params.add(match[1])
      parts.push(`:${match[1]}`)
      continue
    }
    if (/[[\]]/.test(segment)) {
      return { ok: false, message: `path segment "${segment}" is not a valid parameter; write [name] or [...name]` }
    }
    if (segment === '') return { ok: false, message: 'empty path segment' }
    parts.push(segment)
  }
  const path = `${prefix}/${parts.join('/')}`
  return { ok: true, path: path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path }
}

/**
 * Orders URL patterns segment by segment: static segments before parameters,
 * parameters before catch-alls, then by name. Routers that try routes in
 * order then match the most specific one first.
 */
export function compareUrlPaths(a: string, b: string): number {
  const sa = a.split('/')
  const sb = b.split('/')
  const n = Math.min(sa.length, sb.length)
  for (let i = 0; i < n; i++) {
    if (sa[i] === sb[i]) continue
    const ra = segmentRank(sa[i])
    const rb = segmentRank(sb[i])
    if (ra !== rb) return ra - rb
    return sa[i] < sb[i] ? -1 : 1
  }
  return sa.length - sb.length
}

function segmentRank(segment: string): number {
  if (!segment.startsWith(':')) return 0
  return segment.endsWith('*') ? 2 : 1
}
