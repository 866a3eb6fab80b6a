import { join } from 'node:path'
import type { TargetDescriptor } from '#svc/build/target.ts'
import { appDependencies, appLockFile, readAppPackage } from '#svc/build/app-package.ts'

/** `.output/node/server.mjs`: the whole app on one Node server, plus a package.json and a Dockerfile. */
export const nodeTarget: TargetDescriptor = {
  name: 'node',
  hot: true,
  // The in-process scheduler applies time zones.
  cronTimezones: true,
  platform: 'node',
  outDir: '.output/node',
  async write(ctx) {
    const out = join(ctx.root, this.outDir)
    // Without a public/ folder there is nothing to serve, and naming one
    // would only make every start warn that it does not exist.
    const hasPublic = await ctx.copyPublic(join(out, 'public'))
    // fileURLToPath, not URL#pathname: the pathname keeps spaces and non-ASCII
    // letters percent-encoded, which names a directory that does not exist.
    const entry = hasPublic
      ? `${ctx.appSource}
import { fileURLToPath } from 'node:url'
import { serveApp } from 'svc/node-target'
await serveApp({ ...app, staticDirs: [fileURLToPath(new URL('./public', import.meta.url))] })
`
      : `${ctx.appSource}
import { serveApp } from 'svc/node-target'
await serveApp(app)
`
    const files = [await ctx.bundle(entry, join(out, 'server.mjs'))]
    const dependencies = await appDependencies(ctx.root)
    const appPkg = await readAppPackage(ctx.root)
    files.push(
      await ctx.writeFile(
        join(out, 'package.json'),
        `${JSON.stringify(
          {
            name: appPkg.name ?? 'svc-app',
            private: true,
            type: 'module',
            main: 'server.mjs',
            scripts: { start: 'node server.mjs' },
            dependencies,
          },
          null,
          2,
        )}\n`,
      ),
    )
    const hasDependencies = Object.keys(dependencies).length > 0
    // npm ci installs exactly the versions the lock file pins. It accepts the
    // output's package.json, which lists fewer dependencies than the app's
    // (svc and dev tools are not needed), because it only checks that what
    // package.json asks for is in the lock.
    const lock = hasDependencies ? await appLockFile(ctx.root) : undefined
    if (lock) files.push(await ctx.writeFile(join(out, lock.name), lock.contents))
    files.push(await ctx.writeFile(join(out, 'Dockerfile'), dockerfile(hasDependencies, lock?.name)))
    return files
  },
}

/**
 * The server runs as the image's unprivileged `node` user, on files root
 * owns, so a compromised process cannot rewrite the app. The slim image has
 * no curl or wget: the health check asks `/__health` with Node's fetch.
 */
function dockerfile(hasDependencies: boolean, lockFile: string | undefined): string {
  const probe = `fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/__health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`
  const install = !hasDependencies
    ? ['# No runtime dependencies to install: server.mjs bundles the app.']
    : lockFile
      ? [`COPY package.json ${lockFile} ./`, 'RUN npm ci --omit=dev --no-audit --no-fund']
      : ['COPY package.json ./', 'RUN npm install --omit=dev --no-audit --no-fund']
  return [
    'FROM node:24-slim',
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    ...install,
    'COPY . .',
    // The server keeps runs in .svc/runs.db under WORKDIR unless SVC_STORE_URL says otherwise; mount a volume there to keep them.
    'RUN mkdir -p .svc && chown node:node .svc',
    'USER node',
    'EXPOSE 3000',
    `HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ${JSON.stringify(['node', '-e', probe])}`,
    'CMD ["node", "server.mjs"]',
    '',
  ].join('\n')
}
