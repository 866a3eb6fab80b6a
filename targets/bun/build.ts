import { HEALTH_PROBE, serverTarget } from '#svc/build/server-output.ts'

/** `.output/bun/server.mjs`: the whole app on one `Bun.serve` server, plus a package.json and a Dockerfile. */
export const bunTarget = serverTarget('bun', {
  runtime: 'svcjs/bun',
  command: ['bun', 'server.mjs'],
  image: 'oven/bun:1-slim',
  user: 'bun',
  // bun install reads an npm lock file and installs the versions it pins.
  install: () => 'RUN bun install --production',
  healthcheck: ['bun', '-e', HEALTH_PROBE],
})
