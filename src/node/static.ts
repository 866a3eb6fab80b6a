/**
 * Static files from `staticDirs`, tried in order, on srvx's static
 * middleware: paths that resolve outside a directory (`..`, encoded `%2e%2e`,
 * symlinks) and dot files other than `.well-known` are never served;
 * `Content-Type` from the extension; weak `ETag` and `Last-Modified` with
 * 304 answers (RFC 9110 §13); HEAD without a body; `/` and `/about` find
 * `index.html` and `about.html`, so static and client pages are served too.
 */
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { ServerRequest } from 'srvx'
import { staticMiddleware } from 'srvx/static'
import type { Logger } from '../types.ts'

export type StaticHandler = (request: Request) => Promise<Response | undefined>

/** Resolves `dirs` against `cwd` and warns about the ones that do not exist, which would serve nothing. */
export function createStaticHandler(dirs: readonly string[], logger: Logger, cwd = process.cwd()): StaticHandler | undefined {
  const usable: string[] = []
  for (const dir of dirs) {
    const abs = resolve(cwd, dir)
    if (!existsSync(abs) || !statSync(abs).isDirectory()) {
      logger.warn(`[svc] staticDirs: ${abs} is not a directory; nothing will be served from it`)
      continue
    }
    usable.push(abs)
  }
  if (usable.length === 0) return undefined
  const chain = usable.map((dir) => staticMiddleware({ dir }))
  // Identity marks "this directory has no such file"; it is never sent.
  const PASS = new Response(null, { status: 404 })
  const pass = () => PASS
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined
    for (const serve of chain) {
      const res = await serve(request as ServerRequest, pass)
      if (res !== PASS) return res
    }
    return undefined
  }
}
