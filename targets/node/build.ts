import { HEALTH_PROBE, serverTarget } from '#svc/build/server-output.ts'

/** `.output/node/server.mjs`: the whole app on one Node server, plus a package.json and a Dockerfile. */
export const nodeTarget = serverTarget('node', {
  runtime: 'svcjs/node-target',
  command: ['node', 'server.mjs'],
  image: 'node:24-slim',
  user: 'node',
  // npm ci installs exactly the versions the lock file pins.
  install: (lockFile) => (lockFile ? 'RUN npm ci --omit=dev --no-audit --no-fund' : 'RUN npm install --omit=dev --no-audit --no-fund'),
  healthcheck: ['node', '-e', HEALTH_PROBE],
})
