/**
 * The output of a target that runs the whole app as one long-lived server
 * on a JavaScript runtime (bun, deno): `server.mjs`, the app's public/
 * folder beside it, a package.json whose `start` script runs it, the app's
 * npm lock file, and a Dockerfile.
 */
import { join } from 'node:path'
import { appDependencies, appLockFile, readAppPackage } from './app-package.ts'
import type { BuiltFile, TargetContext } from './target.ts'

export interface ServerOutput {
  /** Output directory, relative to the app root. */
  outDir: string
  /** The svc entry point whose `serveApp(app)` the generated server calls: `svc/bun`. */
  runtime: string
  /** The command that starts the server in the output directory. */
  start: string
  /** The Dockerfile, given whether the app has dependencies to install and the name of its lock file. */
  dockerfile(install: { hasDependencies: boolean; lockFile: string | undefined }): string
}

export async function writeServerOutput(ctx: TargetContext, output: ServerOutput): Promise<BuiltFile[]> {
  const out = join(ctx.root, output.outDir)
  // Without a public/ folder there is nothing to serve, and naming one
  // would only make every start warn that it does not exist.
  const hasPublic = await ctx.copyPublic(join(out, 'public'))
  // fileURLToPath, not URL#pathname: the pathname keeps spaces and non-ASCII
  // letters percent-encoded, which names a directory that does not exist.
  const entry = hasPublic
    ? `${ctx.appSource}
import { fileURLToPath } from 'node:url'
import { serveApp } from '${output.runtime}'
await serveApp({ ...app, staticDirs: [fileURLToPath(new URL('./public', import.meta.url))] })
`
    : `${ctx.appSource}
import { serveApp } from '${output.runtime}'
await serveApp(app)
`
  const files = [await ctx.bundle(entry, join(out, 'server.mjs'))]
  const dependencies = await appDependencies(ctx.root)
  const appPkg = await readAppPackage(ctx.root)
  const pkg = {
    name: appPkg.name ?? 'svc-app',
    private: true,
    type: 'module',
    main: 'server.mjs',
    scripts: { start: output.start },
    dependencies,
  }
  files.push(await ctx.writeFile(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`))
  const hasDependencies = Object.keys(dependencies).length > 0
  const lock = hasDependencies ? await appLockFile(ctx.root) : undefined
  if (lock) files.push(await ctx.writeFile(join(out, lock.name), lock.contents))
  files.push(await ctx.writeFile(join(out, 'Dockerfile'), output.dockerfile({ hasDependencies, lockFile: lock?.name })))
  return files
}
