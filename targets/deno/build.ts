import type { TargetDescriptor } from '#svc/build/target.ts'
import { writeServerOutput } from '#svc/build/server-output.ts'

/**
 * What the server needs of Deno's permissions: the network (to listen, and
 * to reach Postgres), the environment (PORT, HOST, SVC_STORE_URL, the task
 * secret), files (public/, and the SQLite run store under .svc/) and the
 * host name (a SQLite store records which host holds each run).
 */
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read', '--allow-write', '--allow-sys=hostname']

/** `.output/deno/server.mjs`: the whole app on one `Deno.serve` server, plus a package.json and a Dockerfile. */
export const denoTarget: TargetDescriptor = {
  name: 'deno',
  hot: true,
  // The in-process scheduler applies time zones.
  cronTimezones: true,
  platform: 'node',
  outDir: '.output/deno',
  write(ctx) {
    return writeServerOutput(ctx, {
      outDir: this.outDir,
      runtime: 'svc/deno',
      start: ['deno', 'run', ...PERMISSIONS, 'server.mjs'].join(' '),
      dockerfile,
    })
  },
}

/**
 * The server runs as the image's unprivileged `deno` user, on files root
 * owns, so a compromised process cannot rewrite the app. The health check
 * asks `/__health` with Deno's fetch.
 */
function dockerfile({ hasDependencies, lockFile }: { hasDependencies: boolean; lockFile: string | undefined }): string {
  const probe = `fetch('http://127.0.0.1:' + (Deno.env.get('PORT') || 3000) + '/__health').then((r) => Deno.exit(r.ok ? 0 : 1), () => Deno.exit(1))`
  // deno install reads package.json and installs into node_modules, where server.mjs finds the app's dependencies.
  const install = hasDependencies
    ? [`COPY package.json ${lockFile ? `${lockFile} ` : ''}./`, 'RUN deno install']
    : ['# No runtime dependencies to install: server.mjs bundles the app.']
  return [
    'FROM denoland/deno:2',
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    ...install,
    'COPY . .',
    // The server keeps runs in .svc/runs.db under WORKDIR unless SVC_STORE_URL says otherwise; mount a volume there to keep them.
    'RUN mkdir -p .svc && chown deno:deno .svc',
    'USER deno',
    'EXPOSE 3000',
    `HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ${JSON.stringify(['deno', 'eval', probe])}`,
    `CMD ${JSON.stringify(['deno', 'run', ...PERMISSIONS, 'server.mjs'])}`,
    '',
  ].join('\n')
}
