/**
 * The version each task route of a build carries (`RuntimeApiRoute.version`,
 * docs/deploying.md "Runs across deploys"): a digest of the code of the task's module and of every
 * module it imports, directly or not, as the bundler sees them. A change to
 * a helper a task imports changes that task's version; a change to a file it
 * does not import changes nothing.
 *
 * The module graph is complete only once the bundler renders the chunk, and
 * the entry is written before that. So the entry carries a placeholder of the
 * digest's length for each task, and `plugin` swaps it for the digest as the
 * chunk renders, before minification: same length, so the source map holds.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, sep } from 'node:path'
import type { Plugin, PluginContext } from 'rolldown'
import type { ManifestRoute } from '../types.ts'

/** Hex characters of the sha256 a version keeps. */
export const VERSION_LENGTH = 12

/** A manifest route as the generated entry writes it: task routes with their version. */
export type VersionedRoute = ManifestRoute & { version?: string }

export interface TaskVersions {
  /** The routes, each task route with the placeholder of its version. */
  routes: VersionedRoute[]
  /** Replaces each placeholder with the task's digest; fails when a task's module is not in the bundle. */
  plugin: Plugin
}

/**
 * Placeholders for the versions of the task routes among `routes`, and the
 * bundler plugin that fills them in. The routes' files are relative to `root`.
 */
export function taskVersions(root: string, routes: readonly ManifestRoute[]): TaskVersions {
  // Random per build, so no app code holds one by chance; `~` is no hex
  // digit, so none passes for a digest.
  const nonce = randomBytes(3).toString('base64url')
  const tasks = new Map<string, string>()
  const versioned = routes.map((route, i) => {
    if (route.kind !== 'task') return route
    const placeholder = `~${nonce}~${i.toString(36)}`.padEnd(VERSION_LENGTH, '~')
    tasks.set(placeholder, route.file)
    return { ...route, version: placeholder }
  })
  const names = moduleNames(root)
  const plugin: Plugin = {
    name: 'svc:task-versions',
    renderChunk(code) {
      let out = code
      for (const [placeholder, file] of tasks) {
        if (!out.includes(placeholder)) continue
        out = out.replaceAll(placeholder, moduleDigest(this, join(root, file), names))
      }
      return out === code ? null : { code: out, map: null }
    },
  }
  return { routes: versioned, plugin }
}

/**
 * sha256 over the (name, code) of `file`'s module and of every module it
 * reaches through static and dynamic imports, sorted by name. External
 * modules and the bundler's own helpers have no code here and count only as
 * the imports that name them.
 */
function moduleDigest(context: PluginContext, file: string, name: (id: string) => string): string {
  const start = [file, realpath(file)].find((id) => context.getModuleInfo(id))
  if (start === undefined) throw new Error(`${file}: the task's module is not in the bundle, so its version cannot be computed`)
  const modules = new Map<string, string>()
  const queue = [start]
  const seen = new Set(queue)
  while (queue.length) {
    const info = context.getModuleInfo(queue.pop()!)
    if (!info || info.code === null) continue
    modules.set(name(info.id), info.code)
    for (const next of [...info.importedIds, ...info.dynamicallyImportedIds]) {
      if (seen.has(next)) continue
      seen.add(next)
      queue.push(next)
    }
  }
  const hash = createHash('sha256')
  for (const key of [...modules.keys()].sort()) hash.update(`${JSON.stringify([key, modules.get(key)])}\n`)
  return hash.digest('hex').slice(0, VERSION_LENGTH)
}

/**
 * Names a module by where it is, never by the app's absolute path, so the
 * same app built in two directories gets the same versions: a module in the
 * app by its path from the root, one outside (svc's own sources, packages
 * hoisted above the app) by its package's name and its path in that package.
 */
function moduleNames(root: string): (id: string) => string {
  const roots = [...new Set([root, realpath(root)])]
  // The package each directory is in, looked up once per directory.
  const packages = new Map<string, { dir: string; name: string } | undefined>()
  const packageOf = (dir: string): { dir: string; name: string } | undefined => {
    if (packages.has(dir)) return packages.get(dir)
    const manifest = join(dir, 'package.json')
    const name = existsSync(manifest) ? packageName(manifest) : undefined
    const found = name !== undefined ? { dir, name } : dirname(dir) === dir ? undefined : packageOf(dirname(dir))
    packages.set(dir, found)
    return found
  }
  return (id) => {
    // Ids the bundler made up (`\0…`) name no file.
    if (!isAbsolute(id)) return id
    const inApp = roots.map((base) => relative(base, id)).find((path) => !isAbsolute(path) && path !== '..' && !path.startsWith(`..${sep}`))
    if (inApp !== undefined) return toPosix(inApp)
    const pkg = packageOf(dirname(id))
    return pkg ? `${pkg.name}/${toPosix(relative(pkg.dir, id))}` : toPosix(relative(root, id))
  }
}

function packageName(manifest: string): string | undefined {
  try {
    const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }
    return typeof name === 'string' && name ? name : undefined
  } catch {
    return undefined
  }
}

function realpath(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/')
}
