import { join } from 'node:path'
import type { TargetDescriptor } from '../../src/build/target.ts'
import { appDependencies, readAppPackage } from '../../src/build/app-package.ts'

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
        JSON.stringify(
          { name: appPkg.name ?? 'svc-app', private: true, type: 'module', main: 'server.mjs', scripts: { start: 'node server.mjs' }, dependencies },
          null,
          2,
        ) + '\n',
      ),
      await ctx.writeFile(
        join(out, 'Dockerfile'),
        [
          'FROM node:24-slim',
          'WORKDIR /app',
          'ENV NODE_ENV=production PORT=3000',
          'COPY package.json ./',
          Object.keys(dependencies).length ? 'RUN npm install --omit=dev --no-audit --no-fund' : '# No runtime dependencies to install: server.mjs bundles the app.',
          'COPY . .',
          'EXPOSE 3000',
          'CMD ["node", "server.mjs"]',
          '',
        ].join('\n'),
      ),
    )
    return files
  },
}
