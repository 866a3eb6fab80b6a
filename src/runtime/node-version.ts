/**
 * The oldest Node that svc runs on, as package.json `engines` says (a test
 * keeps the two equal): `node:sqlite` works without a flag from 22.13 on, and
 * Node runs TypeScript (svc's sources in a checkout, an app's tests) from
 * 22.18 on; one version is asked of every user.
 * bin/svc.mjs, which any Node must be able to read, keeps its own copy.
 */
export const MIN_NODE_VERSION = '22.18.0'

/**
 * Throws an error naming the Node that svc needs and how to get it, when the
 * process is Node and older than MIN_NODE_VERSION. An older Node would get
 * as far as importing svc and then fail on a missing built-in, with a message
 * that says nothing of the cause. Other runtimes (workerd, Deno, Bun) are left
 * alone: what they report as a Node version is that of their compatibility layer.
 */
export function assertSupportedNode(): void {
  const proc = (globalThis as { process?: { release?: { name?: string }; versions?: { node?: string } } }).process
  const version = proc?.versions?.node
  if (proc?.release?.name !== 'node' || typeof version !== 'string') return
  // Node 21 and later answer `Node.js/<major>`; Node 20 has no navigator.
  const agent = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent
  if (agent !== undefined && !agent.startsWith('Node.js')) return
  if (compareVersions(version, MIN_NODE_VERSION) >= 0) return
  throw new Error(unsupportedNodeMessage(version))
}

/** What to tell a user on Node `version` (such as `20.20.2`), which is older than svc supports. */
function unsupportedNodeMessage(version: string): string {
  const minimum = MIN_NODE_VERSION.replace(/\.0$/, '')
  return (
    `svc needs Node.js ${minimum} or later (this is Node v${version.replace(/^v/, '')}). ` +
    'Install Node 24 LTS from https://nodejs.org, or with a version manager: `nvm install 24`, `fnm install 24` or `volta install node@24`.'
  )
}

function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0)
  return 0
}

// Each entry of svc imports this module first, so that `import 'svcjs'` on an
// older Node fails here, saying what to install, rather than later and obscurely.
assertSupportedNode()
