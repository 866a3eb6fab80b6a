import { defineBuildConfig } from 'unbuild'

export default defineBuildConfig({
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
  },
  externals: [/^node:/],
})
