import type { TargetDescriptor } from '#svc/build/target.ts'
import { writeServerOutput } from '#svc/build/server-output.ts'

/** `.output/bun/server.mjs`: the whole app on one `Bun.serve` server, plus a package.json and a Dockerfile. */
export const bunTarget: TargetDescriptor = {
  name: 'bun',
  hot: true,
  // The in-process scheduler applies time zones.
  cronTimezones: true,
  platform: 'node',
  outDir: '.output/bun',
  write(ctx) {
    return writeServerOutput(ctx, { outDir: this.outDir, runtime: 'svc/bun', start: 'bun server.mjs', dockerfile })
  },
}

/**
 * The server runs as the image's unprivileged `bun` user, on files root
 * owns, so a compromised process cannot rewrite the app. The slim image has
 * no curl: the health check asks `/__health` with Bun's fetch.
 */
function dockerfile({ hasDependencies, lockFile }: { hasDependencies: boolean; lockFile: string | undefined }): string {
  const probe = `fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/__health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`
  // bun install reads an npm lock file and installs the versions it pins.
  const install = hasDependencies
    ? [`COPY package.json ${lockFile ? `${lockFile} ` : ''}./`, 'RUN bun install --production']
    : ['# No runtime dependencies to install: server.mjs bundles the app.']
  return [
    'FROM oven/bun:1-slim',
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    ...install,
    'COPY . .',
    // The server keeps runs in .svc/runs.db under WORKDIR unless SVC_STORE_URL says otherwise; mount a volume there to keep them.
    'RUN mkdir -p .svc && chown bun:bun .svc',
    'USER bun',
    'EXPOSE 3000',
    `HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ${JSON.stringify(['bun', '-e', probe])}`,
    'CMD ["bun", "server.mjs"]',
    '',
  ].join('\n')
}
