import { fileURLToPath } from 'node:url'
import type { Plugin } from 'rollup'
import { defineBuildConfig } from 'unbuild'
import { TARGET_NAMES, targetEntry } from './src/self/targets.ts'

/** svc's own import map (package.json `imports`): specifiers of it resolve into the sources, which dist/ must contain. */
const OWN_IMPORTS = /^#svc\//

export default defineBuildConfig({
  // One entry per `exports` subpath (test/build/target-lists.test.ts checks the two agree), plus the CLI.
  entries: [
    { input: 'src/index', name: 'index' },
    { input: 'src/node', name: 'node' },
    { input: 'src/manifest', name: 'manifest' },
    { input: 'src/postgres', name: 'postgres' },
    { input: 'src/testing', name: 'testing' },
    { input: 'src/client', name: 'client' },
    { input: 'src/cli/main', name: 'cli' },
    ...TARGET_NAMES.map((name) => ({ input: `targets/${name}/runtime`, name: targetEntry(name) })),
  ],
  declaration: 'node16',
  clean: true,
  rollup: {
    emitCJS: false,
    inlineDependencies: false,
    // Every module of svc is an ES module and dependencies stay external, so
    // there is no CommonJS to convert. The plugin would still parse each
    // module that mentions `module` or `require`, and its parser rejects the
    // CLI's top-level await.
    commonjs: false,
  },
  externals: [/^node:/],
  hooks: {
    'rollup:options'(_ctx, options) {
      // unbuild keeps every package.json `imports` key external, as if it
      // named another package; svc's own point into its sources, which dist/
      // bundles like any relative import.
      const external = options.external as (id: string, importer: string | undefined, resolved: boolean) => boolean
      options.external = (id, importer, resolved) => !OWN_IMPORTS.test(id) && external(id, importer, resolved)
      options.plugins = [targetBuilds(), ...(Array.isArray(options.plugins) ? options.plugins : [options.plugins])]
    },
    // bin/svc.mjs runs the CLI; it exports nothing to type.
    'rollup:dts:options'(_ctx, options) {
      const input = options.input as Record<string, string>
      delete input.cli
    },
  },
})

/**
 * `loadTarget` imports `targets/<name>/build.ts` by a path computed from the
 * name, which a bundler cannot follow. This writes the import out once per
 * name of `TARGET_NAMES`, so that each target's build step is in dist/.
 */
function targetBuilds(): Plugin {
  const file = fileURLToPath(new URL('src/build/targets.ts', import.meta.url))
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the template literal's source text, as targets.ts writes it
  const computed = 'import(`../../targets/${name}/build.ts`)'
  return {
    name: 'svc:target-builds',
    transform(code, id) {
      if (id !== file) return null
      if (!code.includes(computed))
        this.error(`${file} no longer imports ${computed}; update the svc:target-builds plugin in build.config.ts`)
      const literal = TARGET_NAMES.map((name) => `${JSON.stringify(name)}: () => import('../../targets/${name}/build.ts')`)
      return { code: code.replace(computed, `({ ${literal.join(', ')} })[name]()`), map: null }
    },
  }
}
