import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * svc's own public entry points, as app code and generated entries import them.
 * Builds alias these to this copy of svc, so an app and the server that runs it
 * share one runtime (one active task runtime, one registry). The app loader
 * hands app code the modules this process already loaded for the main ones.
 */
const ENTRIES = {
  svc: ['src/index.ts', 'dist/index.mjs'],
  'svc/node': ['src/node.ts', 'dist/node.mjs'],
  'svc/manifest': ['src/manifest.ts', 'dist/manifest.mjs'],
  'svc/cloudflare': ['targets/cloudflare/runtime.ts', 'dist/cloudflare.mjs'],
  'svc/lambda': ['targets/lambda/runtime.ts', 'dist/lambda.mjs'],
  'svc/vercel': ['targets/vercel/runtime.ts', 'dist/vercel.mjs'],
  'svc/node-target': ['targets/node/runtime.ts', 'dist/node-target.mjs'],
} as const

export type SelfEntry = keyof typeof ENTRIES

let cachedRoot: string | undefined

/** The directory of svc's own package.json. */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot
  const start = dirname(fileURLToPath(import.meta.url))
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'svc') return (cachedRoot = dir)
    if (dirname(dir) === dir) throw new Error(`Cannot find the svc package root above ${start}`)
  }
}

/** Whether svc itself runs from its TypeScript sources (a checkout) rather than `dist/`. */
export function runningFromSource(): boolean {
  return import.meta.url.endsWith('.ts')
}

/** Absolute file of one of svc's entry points, sources or dist to match how svc runs. */
export function selfEntry(name: SelfEntry): string {
  const [source, dist] = ENTRIES[name]
  return join(packageRoot(), runningFromSource() ? source : dist)
}

/** Alias map from every public specifier of svc to its file. */
export function selfAliases(): Record<SelfEntry, string> {
  const out = {} as Record<SelfEntry, string>
  for (const name of Object.keys(ENTRIES) as SelfEntry[]) out[name] = selfEntry(name)
  return out
}
