import { serverTarget } from '#svc/build/server-output.ts'

/**
 * What the server needs of Deno's permissions: the network (to listen, and
 * to reach Postgres), the environment (PORT, HOST, SVC_STORE_URL, the task
 * secret), files (public/, and the SQLite run store under .svc/) and the
 * host name (a SQLite store records which host holds each run).
 */
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read', '--allow-write', '--allow-sys=hostname']

/** `.output/deno/server.mjs`: the whole app on one `Deno.serve` server, plus a package.json and a Dockerfile. */
export const denoTarget = serverTarget('deno', {
  runtime: 'svcjs/deno',
  command: ['deno', 'run', ...PERMISSIONS, 'server.mjs'],
  image: 'denoland/deno:2',
  user: 'deno',
  // deno install reads package.json and installs into node_modules, where server.mjs finds the app's dependencies.
  install: () => 'RUN deno install',
  healthcheck: [
    'deno',
    'eval',
    `fetch('http://127.0.0.1:' + (Deno.env.get('PORT') || 3000) + '/__health').then((r) => Deno.exit(r.ok ? 0 : 1), () => Deno.exit(1))`,
  ],
})
