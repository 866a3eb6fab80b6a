/**
 * The templates an app can start from. Each is a stack of folders under
 * `templates/`, copied in order (a later one wins on a shared path), plus what
 * goes into the app's package.json and README.
 */

/**
 * @typedef {object} Template
 * @property {string} summary One line for `--help`.
 * @property {string[]} layers Folders under templates/, copied in order.
 * @property {'node' | 'cloudflare'} target What `npm run build` builds for.
 * @property {Record<string, string>} [dependencies] Besides svc.
 * @property {Record<string, string>} [devDependencies] Besides the ones every app gets.
 * @property {Record<string, string>} [scripts] Besides the ones every app gets.
 */

/** @type {Record<'basic' | 'durable' | 'cloudflare', Template>} */
export const TEMPLATES = {
  basic: {
    summary: 'a route, a scheduled task with steps, and their tests (default)',
    layers: ['base'],
    target: 'node',
  },
  durable: {
    summary: 'basic, plus a task that sleeps for a day, its runs kept in SQLite',
    layers: ['base', 'durable'],
    target: 'node',
    dependencies: { valibot: '^1.5.0' },
  },
  cloudflare: {
    summary: 'basic, built for Cloudflare Workers (wrangler), runs kept in a Durable Object',
    layers: ['base'],
    target: 'cloudflare',
    devDependencies: { wrangler: '^4.164.0' },
    scripts: {
      preview: 'wrangler dev --config .output/cloudflare/wrangler.json',
      deploy: 'wrangler deploy --config .output/cloudflare/wrangler.json',
    },
  },
}

/** How `npm run build` builds each target, and how `npm start` runs the result where it can run locally. */
const BUILDS = {
  node: { build: 'svc build', start: 'node .output/node/server.mjs' },
  cloudflare: { build: 'svc build --target cloudflare', start: undefined },
}

/**
 * The app's package.json.
 * @param {Template} template
 * @param {{ name: string, svcSpec: string }} options
 */
export function appPackage(template, { name, svcSpec }) {
  const { build, start } = BUILDS[template.target]
  return {
    name,
    version: '0.0.0',
    private: true,
    type: 'module',
    // The Node svc asks for: `node --test` runs the tests' TypeScript without a flag from 22.18 on.
    engines: { node: '>=22.18' },
    scripts: {
      dev: 'svc dev',
      build,
      ...(start ? { start } : {}),
      ...template.scripts,
      // .svc/types.d.ts types enqueue() by task name; it is git-ignored, so it is written before every check.
      typecheck: 'svc types && tsc --noEmit',
      // Named files rather than a bare `node --test`: a Node too old to strip
      // types fails on them loudly instead of finding no tests and passing.
      test: 'node --test test/*.test.ts',
    },
    dependencies: sorted({ svcjs: svcSpec, ...template.dependencies }),
    devDependencies: sorted({ '@types/node': '^24.19.2', typescript: '^5.9.3', ...template.devDependencies }),
  }
}

/**
 * @param {Record<string, string>} record
 * @returns {Record<string, string>}
 */
function sorted(record) {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)))
}
