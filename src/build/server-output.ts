/**
 * The targets whose output is the whole app as one long-lived server on a
 * JavaScript runtime (node, bun, deno): `server.mjs`, the app's public/
 * folder beside it, a package.json whose `start` script runs it, the app's
 * npm lock file, and a Dockerfile. Each target says only what its runtime
 * does differently (`ServerOutput`).
 */
import { join } from 'node:path'
import { appDependencies, appLockFile, readAppPackage } from './app-package.ts'
import { STARTUP_GUARD_ID, startupGuardSource } from './startup-guard.ts'
import type { BuiltFile, TargetContext, TargetDescriptor } from './target.ts'

export interface ServerOutput {
  /** The svc entry point whose `serveApp(app)` the generated server calls: `svcjs/bun`. */
  runtime: string
  /** What starts the server in the output directory: the `start` script, and the image's `CMD`. */
  command: string[]
  /** The image the Dockerfile builds on. */
  image: string
  /** The image's unprivileged user, whom the server runs as. */
  user: string
  /** The `RUN` line that installs the app's dependencies from package.json and the lock file, when the app has one. */
  install(lockFile: string | undefined): string
  /** The command of the image's `HEALTHCHECK`, which asks `/__health`. */
  healthcheck: string[]
}

/** The health check of the images whose runtime reads `process` (Node's, Bun's): the slim images have no curl or wget. */
export const HEALTH_PROBE = `fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/__health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))`

/** A server target: `.output/<name>/server.mjs` and what runs it. */
export function serverTarget(name: 'node' | 'bun' | 'deno', output: ServerOutput): TargetDescriptor {
  return {
    name,
    hot: true,
    // The in-process scheduler applies time zones.
    cronTimezones: true,
    platform: 'node',
    outDir: `.output/${name}`,
    write(ctx) {
      return writeServerOutput(ctx, join(ctx.root, this.outDir), output)
    },
  }
}

async function writeServerOutput(ctx: TargetContext, out: string, output: ServerOutput): Promise<BuiltFile[]> {
  // Without a public/ folder there is nothing to serve, and naming one
  // would only make every start warn that it does not exist.
  const hasPublic = await ctx.copyPublic(join(out, 'public'))
  // fileURLToPath, not URL#pathname: the pathname keeps spaces and non-ASCII
  // letters percent-encoded, which names a directory that does not exist.
  // Only the parts of svc the app uses: a server of routes opens no run
  // store and carries no task engine.
  const tasks = ctx.routes.some((route) => route.kind === 'task')
  const pages = ctx.pages.length > 0
  const imports = ['serveApp', ...(tasks ? ['SERVER_TASKS'] : []), ...(pages ? ['PAGES'] : [])]
  const parts = `parts: { ${[...(tasks ? ['tasks: SERVER_TASKS'] : []), ...(pages ? ['pages: PAGES'] : [])].join(', ')} }`
  const serve = hasPublic
    ? `import { fileURLToPath } from 'node:url'
import { ${imports.join(', ')} } from '${output.runtime}'
await serveApp({ ...app, staticDirs: [fileURLToPath(new URL('./public', import.meta.url))], ${parts} })
`
    : `import { ${imports.join(', ')} } from '${output.runtime}'
await serveApp({ ...app, ${parts} })
`
  // The guard is imported first, so it is in place before any other module runs (./startup-guard.ts).
  const entry = `import { started } from '${STARTUP_GUARD_ID}'
${ctx.appSource}
${serve}started()
`
  const files = [await ctx.bundle(entry, join(out, 'server.mjs'), { [STARTUP_GUARD_ID]: startupGuardSource() })]
  const dependencies = await appDependencies(ctx.root)
  const appPkg = await readAppPackage(ctx.root)
  const pkg = {
    name: appPkg.name ?? 'svc-app',
    private: true,
    type: 'module',
    main: 'server.mjs',
    scripts: { start: output.command.join(' ') },
    dependencies,
  }
  files.push(await ctx.writeFile(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`))
  const hasDependencies = Object.keys(dependencies).length > 0
  // The lock file pins the versions the image installs. The output's
  // package.json lists fewer dependencies than the app's (svc and dev tools
  // are not needed); the installers only check that what it asks for is in the lock.
  const lock = hasDependencies ? await appLockFile(ctx.root) : undefined
  if (lock) files.push(await ctx.writeFile(join(out, lock.name), lock.contents))
  files.push(await ctx.writeFile(join(out, 'Dockerfile'), dockerfile(output, hasDependencies, lock?.name)))
  return files
}

/**
 * The server runs as the image's unprivileged user, on files root owns, so
 * a compromised process cannot rewrite the app.
 */
function dockerfile(output: ServerOutput, hasDependencies: boolean, lockFile: string | undefined): string {
  const install = hasDependencies
    ? [`COPY package.json ${lockFile ? `${lockFile} ` : ''}./`, output.install(lockFile)]
    : ['# No runtime dependencies to install: server.mjs bundles the app.']
  const { user } = output
  return [
    `FROM ${output.image}`,
    'WORKDIR /app',
    'ENV NODE_ENV=production PORT=3000',
    ...install,
    'COPY . .',
    // The server keeps runs in .svc/runs.db under WORKDIR unless SVC_STORE_URL says otherwise; mount a volume there to keep them.
    `RUN mkdir -p .svc && chown ${user}:${user} .svc`,
    `USER ${user}`,
    'EXPOSE 3000',
    `HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ${JSON.stringify(output.healthcheck)}`,
    `CMD [${output.command.map((word) => JSON.stringify(word)).join(', ')}]`,
    '',
  ].join('\n')
}
