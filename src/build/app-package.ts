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
