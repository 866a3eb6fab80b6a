import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** The app's package.json, or an empty object when it has none. */
export async function readAppPackage(root: string): Promise<{ name?: string; dependencies?: Record<string, string> }> {
  const text = await readFile(join(root, 'package.json'), 'utf8').catch(() => null)
  return text ? JSON.parse(text) : {}
}

/** The app's own runtime dependencies; Node bundles keep them external and list them in package.json. */
export async function appDependencies(root: string): Promise<Record<string, string>> {
  const { svc: _self, ...deps } = (await readAppPackage(root)).dependencies ?? {}
  return deps
}

/**
 * The app's npm lock file, `npm-shrinkwrap.json` or `package-lock.json` (the
 * order npm reads them in), or undefined. Lock files of other package
 * managers are not read: `npm ci` cannot install from them.
 */
export async function appLockFile(root: string): Promise<{ name: string; contents: string } | undefined> {
  for (const name of ['npm-shrinkwrap.json', 'package-lock.json']) {
    const contents = await readFile(join(root, name), 'utf8').catch(() => null)
    if (contents !== null) return { name, contents }
  }
  return undefined
}
