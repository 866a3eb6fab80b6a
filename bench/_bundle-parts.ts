/**
 * What a Cloudflare worker bundle is made of: the app is bundled as
 * `svc build --target cloudflare` bundles it, with a source map, and every
 * byte of the minified output is charged to the module the map points it at.
 * Each module's gzipped share is what the bundle's gzipped size would lose
 * without its bytes, so shares do not add up to the whole (gzip finds
 * repeats across modules) but say what leaving a module out would save.
 *
 * Run: node bench/_bundle-parts.ts [app root, default playground; the reference apps are bench/_apps/routes and bench/_apps/tasks] [--all]
 */
import { relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { bundle } from '../src/build/bundle.ts'
import { appSource } from '../src/build/entry.ts'
import { scanApp } from '../src/manifest.ts'
import { selfAliases } from '../src/self/entries.ts'
import { cloudflareTarget } from '../targets/cloudflare/build.ts'

export interface BundlePart {
  /** The module, as `hono/dist/…` for a package and a path from svc's root for svc's own. */
  module: string
  bytes: number
  /** Gzipped bytes the bundle would lose without this module's bytes. */
  gzipBytes: number
}

export interface BundleParts {
  bytes: number
  gzipBytes: number
  parts: BundlePart[]
}

const svcRoot = fileURLToPath(new URL('..', import.meta.url))

/** The worker entry `svc build --target cloudflare` bundles for the app at `root`. */
async function workerEntry(root: string): Promise<string> {
  const scan = await scanApp({ root })
  // As the build does: hot routes cannot run in a worker and are left out.
  const routes = scan.routes.filter((route) => route.kind !== 'hot')
  const pages = scan.pages.filter((page) => page.mode === 'server' || page.mode === 'hybrid')
  let entry = ''
  await cloudflareTarget.write({
    root,
    routes,
    pages,
    crons: [],
    appSource: appSource(root, routes, pages),
    async bundle(source) {
      entry = source
      return { path: 'index.mjs', bytes: 0 }
    },
    writeFile: async (file) => ({ path: file, bytes: 0 }),
    copyPublic: async () => false,
  })
  return entry
}

/** Bundles the app's worker and charges its bytes to modules, largest gzipped share first. */
export async function bundleParts(root: string): Promise<BundleParts> {
  const input = resolve(root, '__svc_entry.mjs')
  const { code, map } = await bundle({
    input,
    entrySource: await workerEntry(root),
    platform: 'worker',
    cwd: root,
    alias: selfAliases(),
    sourcemap: true,
  })
  const { sources, mappings } = JSON.parse(map!) as { sources: string[]; mappings: string }
  // Without an output file, rolldown writes sources relative to `<cwd>/dist`.
  const base = resolve(root, 'dist')
  if (!sources.some((source) => resolve(base, source) === input)) throw new Error(`The source map's paths are not relative to ${base}`)
  const owners = ownerOfEachChar(code, mappings)
  const texts = new Map<number, string[]>()
  let start = 0
  for (let i = 1; i <= code.length; i++) {
    if (i < code.length && owners[i] === owners[start]) continue
    const pieces = texts.get(owners[start]) ?? []
    pieces.push(code.slice(start, i))
    texts.set(owners[start], pieces)
    start = i
  }
  const gzipBytes = gzipSync(code).length
  const parts: BundlePart[] = []
  for (const [source, pieces] of texts) {
    const text = pieces.join('')
    // The bundle with this module's bytes cut out.
    const rest = [...texts].flatMap(([other, them]) => (other === source ? [] : them)).join('')
    parts.push({
      module: source < 0 ? '(unmapped)' : moduleName(resolve(base, sources[source])),
      bytes: Buffer.byteLength(text),
      gzipBytes: gzipBytes - gzipSync(rest).length,
    })
  }
  parts.sort((a, b) => b.gzipBytes - a.gzipBytes)
  return { bytes: Buffer.byteLength(code), gzipBytes, parts }
}

function moduleName(file: string): string {
  const inPackage = file.replace(/^.*\/node_modules\//, '')
  return inPackage === file ? relative(svcRoot, file) : inPackage
}

/** For each UTF-16 unit of `code`, the index of the source its mapping segment names (-1: none). */
function ownerOfEachChar(code: string, mappings: string): Int32Array {
  const owners = new Int32Array(code.length).fill(-1)
  const lineStarts = [0]
  for (let i = 0; i < code.length; i++) if (code[i] === '\n') lineStarts.push(i + 1)
  let source = 0
  const fields = [0, 0, 0, 0, 0]
  let previous = -1
  let previousSource = -1
  mappings.split(';').forEach((line, lineIndex) => {
    fields[0] = 0
    for (const segment of line.split(',')) {
      if (!segment) continue
      const values = decodeVlq(segment)
      for (let k = 0; k < values.length; k++) fields[k] += values[k]
      const at = lineStarts[lineIndex] + fields[0]
      if (previous >= 0) owners.fill(previousSource, previous, at)
      source = values.length > 1 ? fields[1] : -1
      previous = at
      previousSource = source
    }
  })
  if (previous >= 0) owners.fill(previousSource, previous)
  return owners
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

/** One source map segment's fields (base64 VLQ, as the Source Map spec defines them). */
function decodeVlq(segment: string): number[] {
  const values: number[] = []
  let value = 0
  let shift = 0
  for (const char of segment) {
    const digit = BASE64.indexOf(char)
    value += (digit & 31) << shift
    if (digit & 32) {
      shift += 5
      continue
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1)
    value = 0
    shift = 0
  }
  return values
}

/** Modules grouped by package, or by svc folder. */
function groupOf(module: string): string {
  if (module.startsWith('src/') || module.startsWith('targets/')) return module.split('/').slice(0, -1).join('/')
  // A package (its first segment, two when scoped), or the app's own files.
  if (!module.includes('/') || module.startsWith('.')) return module
  return module.startsWith('@') ? module.split('/').slice(0, 2).join('/') : module.split('/')[0]
}

/** Each group's modules, bytes and gzipped share, largest share first. */
export function groupShares(parts: BundlePart[]): Array<[group: string, share: { bytes: number; gzipBytes: number; modules: number }]> {
  const groups = new Map<string, { bytes: number; gzipBytes: number; modules: number }>()
  for (const part of parts) {
    const group = groups.get(groupOf(part.module)) ?? { bytes: 0, gzipBytes: 0, modules: 0 }
    group.bytes += part.bytes
    group.gzipBytes += part.gzipBytes
    group.modules++
    groups.set(groupOf(part.module), group)
  }
  return [...groups].sort((a, b) => b[1].gzipBytes - a[1].gzipBytes)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2)
  const root = resolve(args.find((arg) => !arg.startsWith('--')) ?? fileURLToPath(new URL('../playground', import.meta.url)))
  const { bytes, gzipBytes, parts } = await bundleParts(root)
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  console.log(`worker for ${relative(process.cwd(), root) || '.'}: ${kib(bytes)}, ${kib(gzipBytes)} gzipped\n`)
  console.log('GROUP'.padEnd(44), 'MODULES', 'MINIFIED'.padStart(11), 'GZIP SHARE'.padStart(11))
  for (const [name, group] of groupShares(parts)) {
    console.log(name.padEnd(44), String(group.modules).padStart(7), kib(group.bytes).padStart(11), kib(group.gzipBytes).padStart(11))
  }
  console.log(`\n${'MODULE'.padEnd(60)} ${'MINIFIED'.padStart(11)} ${'GZIP SHARE'.padStart(11)}`)
  for (const part of args.includes('--all') ? parts : parts.slice(0, 40)) {
    console.log(part.module.padEnd(60), kib(part.bytes).padStart(11), kib(part.gzipBytes).padStart(11))
  }
}
