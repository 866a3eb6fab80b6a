import { builtinModules } from 'node:module'
import { build, type Plugin } from 'rolldown'

/** Where a bundle runs; decides resolve conditions and whether Node builtins are allowed. */
export type BundlePlatform = 'node' | 'worker'

export interface BundleOptions {
  /** Entry file (absolute), or a virtual entry's source with `entrySource`. */
  input: string
  /** Source of a virtual entry module; `input` is then its (absolute) name. */
  entrySource?: string
  /** More virtual modules the entry may import, by id: the start-up guard of a server. */
  modules?: Record<string, string>
  platform: BundlePlatform
  /** Output file; nothing is written when unset. */
  outFile?: string
  /** @default true */
  minify?: boolean
  /** Module ids left out of the bundle (Node builds keep dependencies external). */
  external?: (string | RegExp)[]
  /** Directory to resolve bare imports from. @default dirname(input) */
  cwd?: string
  /** Exact module specifiers mapped to files, such as svc's own entry points. */
  alias?: Record<string, string>
  /** Also return a source map, to attribute the bundle's bytes to modules. @default false */
  sourcemap?: boolean
  /** More bundler plugins, after svc's own: the build's task versions. */
  plugins?: Plugin[]
}

export interface BundleResult {
  code: string
  /** Every `node:` builtin the bundle imports (always empty for workers: they fail instead). */
  nodeImports: string[]
  /** The source map's JSON, with `sourcemap: true`. */
  map?: string
}

const BUILTINS = new Set(builtinModules)

/** An import of a Node builtin, with or without the `node:` prefix. */
export function isNodeBuiltin(id: string): boolean {
  return id.startsWith('node:') || BUILTINS.has(id) || BUILTINS.has(id.split('/')[0])
}

/**
 * Bundles one entry into a single ES module. Worker bundles resolve the
 * `workerd`/`worker`/`browser` export conditions and fail on any Node builtin,
 * naming the module that imported it, so no Node-only code path reaches an
 * edge target unnoticed.
 */
export async function bundle(options: BundleOptions): Promise<BundleResult> {
  const nodeImports = new Set<string>()
  const offenders: string[] = []
  const worker = options.platform === 'worker'
  const minify = options.minify ?? true
  const guard: Plugin = {
    name: 'svc:node-builtins',
    async resolveId(id, importer) {
      if (!isNodeBuiltin(id)) return null
      if (worker && !id.startsWith('node:')) {
        // `events`, `buffer`, `util`… are also npm packages written for
        // browsers: an installed one is what a bare import means in a worker.
        const installed = await this.resolve(id, importer, { skipSelf: true })
        if (installed && !installed.external) return installed
      }
      nodeImports.add(id)
      if (options.platform === 'worker') offenders.push(`${id} (imported by ${importer ?? 'the entry'})`)
      return { id, external: true }
    },
  }
  const plugins: Plugin[] = [guard]
  if (options.alias) {
    // Exact specifiers only: `svc` must not swallow `svcjs/node`.
    const alias = options.alias
    plugins.push({ name: 'svc:alias', resolveId: (id) => (Object.hasOwn(alias, id) ? alias[id] : null) })
  }
  const virtual: Record<string, string> = { ...options.modules }
  if (options.entrySource !== undefined) virtual[options.input] = options.entrySource
  if (Object.keys(virtual).length) {
    plugins.push({
      name: 'svc:virtual-modules',
      resolveId: (id) => (Object.hasOwn(virtual, id) ? id : null),
      load: (id) => (Object.hasOwn(virtual, id) ? virtual[id] : null),
    })
  }
  plugins.push(...(options.plugins ?? []))
  const output = await build({
    input: options.input,
    cwd: options.cwd,
    platform: worker ? 'browser' : 'node',
    external: options.external,
    plugins,
    resolve: {
      conditionNames: worker ? ['workerd', 'worker', 'browser', 'import', 'default'] : ['node', 'import', 'default'],
    },
    // Calls that only make a value, which the tree-shaker may drop when the
    // value goes unused: svc freezes its constant tables at the top of
    // modules, and without this every module reachable from an entry kept
    // them (a worker of routes carried the task engine's tables).
    treeshake: { manualPureFunctions: ['Object.freeze', 'Object.keys', 'Object.entries', 'Object.values', 'Array.from'] },
    logLevel: 'silent',
    write: Boolean(options.outFile),
    output: {
      file: options.outFile,
      format: 'esm',
      codeSplitting: false,
      // Class names stay: svc's errors take their `name` from their class,
      // and logs and `error.name` checks read it.
      minify: minify
        ? { compress: { keepNames: { function: false, class: true } }, mangle: { keepNames: { function: false, class: true } } }
        : false,
      // A bundle is deployed as built, never bundled again: `@__PURE__` and
      // JSDoc comments would only be bytes. License comments stay.
      comments: minify ? { legal: true, annotation: false, jsdoc: false } : undefined,
      sourcemap: options.sourcemap ? 'hidden' : false,
    },
  })
  if (offenders.length) {
    throw new Error(
      `Node builtins cannot be bundled for an edge worker:\n  ${[...new Set(offenders)].join('\n  ')}\n` +
        'Move Node-only code out of the routes built for this target.',
    )
  }
  const chunk = output.output.find((item) => item.type === 'chunk')
  if (chunk?.type !== 'chunk') return { code: '', nodeImports: [...nodeImports] }
  return { code: chunk.code, nodeImports: [...nodeImports], map: chunk.map?.toString() }
}
