/**
 * The layers of svc and the one direction they import in
 * (docs/internals/architecture.md "Layers"). test/layers.test.ts runs these
 * rules over src/ and targets/ in `npm test`; `npx depcruise src targets`
 * runs them by hand.
 */

/**
 * Lowest first. A layer imports the layers of the tiers before its own, and
 * nothing above; layers of one tier import one another only along `SIDEWAYS`.
 * `edge` layers run in workers and browsers: they import no Node builtin and
 * no layer that is not edge-safe. No layer imports a `leaf`.
 */
const TIERS = [
  {
    runtime: { path: ['^src/runtime/', '^src/index\\.ts$', '^src/types\\.ts$'], edge: true },
  },
  {
    manifest: { path: ['^src/manifest/', '^src/manifest\\.ts$'] },
    // The dashboard's browser code: scripts/build-dashboard.ts bundles it
    // into src/runtime/dashboard/page.generated.ts, and no module imports it.
    dashboard: { path: ['^src/dashboard/'], edge: true, leaf: true },
    // `svcjs/client`, browser code for an app's pages: it imports nothing of svc but types.
    client: { path: ['^src/client/', '^src/client\\.ts$'], edge: true },
    // svc's own package: its deployment targets and its public entries, which the loader and the build alias.
    self: { path: ['^src/self/'] },
  },
  {
    postgres: { path: ['^src/postgres/', '^src/postgres\\.ts$'] },
    sqlite: { path: ['^src/sqlite/'] },
    cloudflare: { path: ['^src/cloudflare/'], edge: true },
    node: { path: ['^src/node/', '^src/node\\.ts$'] },
    // Bun and Deno servers.
    serve: { path: ['^src/serve/'] },
  },
  {
    build: { path: ['^src/build/'] },
    dev: { path: ['^src/dev/'] },
    // What the Lambda and Vercel shims share about runs: the store SVC_STORE_URL names, and the one-minute tick.
    functions: { path: ['^src/functions/'] },
    // `svcjs/testing`: an app's tasks run on a virtual clock, for unit tests.
    testing: { path: ['^src/testing/', '^src/testing\\.ts$'] },
  },
  {
    cli: { path: ['^src/cli/'] },
  },
  {
    targets: { path: ['^targets/'] },
  },
]

/** Imports between layers of one tier, each with its reason. */
const SIDEWAYS = {
  // The server opens the store SVC_STORE_URL names: a SQLite file by default, or Postgres.
  node: ['postgres', 'sqlite'],
  // The Bun and Deno servers reuse the Node server's parts that only use what Bun and Deno implement.
  serve: ['node'],
  // The dashboard reads the run-change stream with svcjs/client's reader of event streams.
  dashboard: ['client'],
}

/**
 * The one import from below into targets/: the build lists the targets and
 * loads `targets/<name>/build.ts` by name. The path is computed, so no cruise
 * sees it; build.config.ts writes it out for the bundler.
 */
const TARGET_LOADER = { from: '^src/build/targets\\.ts$', to: '^targets/[^/]+/build\\.ts$' }

const layers = TIERS.flatMap((tier, rank) => Object.entries(tier).map(([name, layer]) => ({ name, rank, ...layer })))
const byName = new Map(layers.map((layer) => [layer.name, layer]))
const layered = layers.flatMap((layer) => layer.path)

function allowed(layer) {
  const below = layers.filter((other) => other.rank < layer.rank && !other.leaf && (!layer.edge || other.edge))
  return [...below, ...(SIDEWAYS[layer.name] ?? []).map((name) => byName.get(name))]
}

const layerRules = layers.flatMap((layer) => {
  const imports = allowed(layer)
  const names = imports.map((other) => other.name)
  const rule = (from, extra = []) => ({
    name: `layer-${layer.name}`,
    severity: 'error',
    comment: `${layer.name} imports ${names.length ? names.join(', ') : 'nothing of svc'} and itself, nothing else of svc`,
    from,
    to: { path: layered, pathNot: [...layer.path, ...imports.flatMap((other) => other.path), ...extra] },
  })
  if (layer.name !== 'build') return [rule({ path: layer.path })]
  return [rule({ path: layer.path, pathNot: TARGET_LOADER.from }), rule({ path: TARGET_LOADER.from }, [TARGET_LOADER.to])]
})

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...layerRules,
    {
      name: 'not-in-a-layer',
      severity: 'error',
      comment: 'Every folder of src/ and targets/ belongs to a layer in TIERS, so that no new folder goes unchecked.',
      from: { path: '^(src|targets)/', pathNot: layered },
      to: {},
    },
    {
      name: 'edge-no-node-builtins',
      severity: 'error',
      comment:
        'Edge code runs in workers and browsers: no Node builtin, not even for types. test/edge/edge-safe.test.ts proves the svc entry bundles for workerd.',
      from: { path: layers.filter((layer) => layer.edge).flatMap((layer) => layer.path) },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'targets-through-import-map',
      severity: 'error',
      comment: "A target reaches svc's sources through package.json `imports` (#svc/…), not a relative path into src/.",
      from: { path: '^targets/' },
      to: { path: '^src/', dependencyTypesNot: ['aliased-subpath-import'] },
    },
    {
      name: 'target-is-one-folder',
      severity: 'error',
      comment: 'A target is its folder: it imports no other target.',
      from: { path: '^targets/([^/]+)/' },
      to: { path: '^targets/', pathNot: '^targets/$1/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No module reaches itself through its imports, type-only ones included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      severity: 'error',
      comment: 'No folder reaches itself through the imports of its modules.',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^node_modules/', '^dist/'] },
    // Type-only imports are dependencies too: they decide which half of svc a file belongs to.
    tsPreCompilationDeps: true,
    // `svc/*` specifiers, as tests and examples write them.
    tsConfig: { fileName: 'tsconfig.json' },
    // package.json `imports` (svc's own `#svc/*` → `./src/*`) resolve as in
    // Node: enhanced-resolve reads that field unless told otherwise.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'types', 'default'],
      extensions: ['.ts', '.mts', '.js', '.mjs', '.d.ts'],
    },
  },
}
