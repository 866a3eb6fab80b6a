import { defineBuildConfig } from 'unbuild'

export default defineBuildConfig({
  // One entry per `exports` subpath (test/package checks the two agree), plus the CLI.
  entries: [
    { input: 'src/index', name: 'index' },
    { input: 'src/node', name: 'node' },
    { input: 'src/manifest', name: 'manifest' },
    { input: 'src/postgres', name: 'postgres' },
    { input: 'src/cli/main', name: 'cli' },
    { input: 'targets/cloudflare/runtime', name: 'cloudflare' },
    { input: 'targets/lambda/runtime', name: 'lambda' },
    { input: 'targets/vercel/runtime', name: 'vercel' },
    { input: 'targets/node/runtime', name: 'node-target' },
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
    // bin/svc.mjs runs the CLI; it exports nothing to type.
    'rollup:dts:options'(_ctx, options) {
      const input = options.input as Record<string, string>
      delete input.cli
    },
  },
})
