/**
 * svc's own package: where it is installed, whether it runs from its
 * TypeScript sources or from `dist/`, and its public entry points, the
 * build targets' included. The app loader and the build both alias app
 * imports of `svcjs/*` through this, so it sits below both.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PACKAGE_NAME } from '../runtime/package-name.ts'
import { TARGET_NAMES, type TargetEntry, targetEntry } from './targets.ts'

export type SelfEntry = typeof PACKAGE_NAME | `${typeof PACKAGE_NAME}/${'node' | 'manifest' | TargetEntry}`

/**
 * svc's own public entry points, as app code and generated entries import
 * them: the source file and the built file of each. Builds alias these to
 * this copy of svc, so an app and the server that runs it share one runtime
 * (one active task runtime, one registry). The app loader hands app code the
 * modules this process already loaded for the main ones.
 */
export const SELF_ENTRIES: Readonly<Record<SelfEntry, readonly [source: string, dist: string]>> = {
  [PACKAGE_NAME]: ['src/index.ts', 'dist/index.mjs'],
  'svcjs/node': ['src/node.ts', 'dist/node.mjs'],
  'svcjs/manifest': ['src/manifest.ts', 'dist/manifest.mjs'],
  ...targetRuntimeEntries(),
}

function targetRuntimeEntries(): Record<`${typeof PACKAGE_NAME}/${TargetEntry}`, readonly [source: string, dist: string]> {
  const out = {} as Record<`${typeof PACKAGE_NAME}/${TargetEntry}`, readonly [source: string, dist: string]>
  for (const name of TARGET_NAMES) {
    out[`${PACKAGE_NAME}/${targetEntry(name)}`] = [`targets/${name}/runtime.ts`, `dist/${targetEntry(name)}.mjs`]
  }
  return out
}

let cachedRoot: string | undefined

/** The directory of svc's own package.json. */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot
  const start = dirname(fileURLToPath(import.meta.url))
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === PACKAGE_NAME) return (cachedRoot = dir)
    if (dirname(dir) === dir) throw new Error(`Cannot find the svc package root above ${start}`)
  }
}

/** Whether svc itself runs from its TypeScript sources (a checkout) rather than `dist/`. */
export function runningFromSource(): boolean {
  return import.meta.url.endsWith('.ts')
}

/** Absolute file of one of svc's entry points, sources or dist to match how svc runs. */
export function selfEntry(name: SelfEntry): string {
  const [source, dist] = SELF_ENTRIES[name]
  return join(packageRoot(), runningFromSource() ? source : dist)
}

/** Alias map from every public specifier of svc to its file. */
export function selfAliases(): Record<SelfEntry, string> {
  const out = {} as Record<SelfEntry, string>
  for (const name of Object.keys(SELF_ENTRIES) as SelfEntry[]) out[name] = selfEntry(name)
  return out
}
