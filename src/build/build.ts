import { cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { gzipSync } from 'node:zlib'
import { assertNoConfigErrors, scanApp } from '../manifest.ts'
import { writeTaskTypes } from '../manifest/task-types.ts'
import { selfAliases } from '../self/entries.ts'
import { appDependencies } from './app-package.ts'
import { bundle } from './bundle.ts'
import { appSource, appTelemetry } from './entry.ts'
import { nameSome, publicFiles } from './public-files.ts'
import { taskVersions } from './task-versions.ts'
import { isTargetName, loadTarget, TARGET_NAMES } from './targets.ts'
import type { BuiltFile, TargetName } from './target.ts'

export interface BuildOptions {
  /** App directory. @default process.cwd() */
  root?: string
  /** @default 'node' */
  target?: TargetName
}

export interface BuildResult {
  target: TargetName
  outDir: string
  files: BuiltFile[]
  /** Build warnings, such as hot routes left out. */
  warnings: string[]
}

/**
 * Scans the app, fails on config errors, leaves out hot routes the target
 * cannot host (with the documented warning), then bundles the app behind the
 * target's generated entry, each task route carrying its version, and writes
 * its platform files.
 */
export async function buildApp(options: BuildOptions = {}): Promise<BuildResult> {
  const root = resolve(options.root ?? '.')
  const targetName = options.target ?? 'node'
  if (!isTargetName(targetName)) {
    throw new TypeError(`Unknown target "${targetName}"; use one of ${TARGET_NAMES.join(', ')}`)
  }
  const target = await loadTarget(targetName)
  const scan = await scanApp({ root })
  // Throws a ManifestError carrying every config error, not only the first.
  assertNoConfigErrors(scan)
  writeTaskTypes(root, scan.routes, scan.events)

  const warnings: string[] = []
  const excluded = target.hot ? [] : scan.routes.filter((route) => route.kind === 'hot')
  if (excluded.length) {
    // The exact warning, and the routes are excluded, not silently omitted.
    warnings.push(
      `[svc] ${excluded.length} hot route(s) cannot run on ${target.name} and were not bundled: ` +
        `${excluded.map((route) => route.path).join(', ')} — deploy them to a persistent host`,
    )
  }
  const routes = scan.routes.filter((route) => !excluded.includes(route))
  const zoned = target.cronTimezones ? [] : routes.filter((route) => route.kind === 'task' && route.schedule && !isUtc(route.timezone))
  if (zoned.length) {
    // The platform's trigger fires at the expression's UTC time, whatever the task's zone.
    warnings.push(
      `[svc] ${target.name} fires cron schedules in UTC; the time zone of ${zoned.length} scheduled task(s) is not applied: ` +
        `${zoned.map((route) => `${route.name} ('${route.schedule}', ${route.timezone})`).join(', ')} — write the schedule in UTC or deploy to a host that applies time zones`,
    )
  }
  const unserved = target.staticHost ? await publicFiles(root) : []
  if (unserved.length) {
    warnings.push(
      `[svc] ${unserved.length} file(s) in public/ cannot be served on ${target.name} and were not bundled: ` +
        `${nameSome(unserved)} — ${target.staticHost}`,
    )
  }
  const pages = scan.pages.filter((page) => page.mode === 'server' || page.mode === 'hybrid')
  const outDir = join(root, target.outDir)
  await rm(outDir, { recursive: true, force: true })
  await mkdir(outDir, { recursive: true })

  const dependencies = await appDependencies(root)
  const external = target.platform === 'node' ? Object.keys(dependencies) : []
  // Each task route's version: a digest of its module and what it imports (task-versions.ts).
  const versions = taskVersions(root, routes)
  const report = async (file: string): Promise<BuiltFile> => {
    const bytes = (await stat(file)).size
    return { path: relative(root, file), bytes }
  }
  const files = await target.write({
    root,
    routes,
    pages,
    crons: [...new Set(routes.flatMap((route) => (route.kind === 'task' && route.schedule ? [route.schedule] : [])))],
    appSource: appSource(root, versions.routes, pages, scan.events, appTelemetry(root, dependencies)),
    async bundle(source, outFile, modules) {
      await mkdir(dirname(outFile), { recursive: true })
      await bundle({
        input: join(root, '__svc_entry.mjs'),
        entrySource: source,
        modules,
        platform: target.platform,
        outFile,
        cwd: root,
        alias: selfAliases(),
        external: external.map((name) => new RegExp(`^${escapeRegExp(name)}(/|$)`)),
        plugins: [versions.plugin],
      })
      const built = await report(outFile)
      return { ...built, gzipBytes: gzipSync(await readFile(outFile)).length }
    },
    async writeFile(file, contents) {
      await mkdir(dirname(file), { recursive: true })
      await writeFile(file, contents)
      return report(file)
    },
    async copyPublic(dir) {
      const from = join(root, 'public')
      if (!(await stat(from).catch(() => null))?.isDirectory()) return false
      await cp(from, dir, { recursive: true })
      return true
    },
  })
  return { target: target.name, outDir, files, warnings }
}

function isUtc(timezone: string | null | undefined): boolean {
  return timezone === null || timezone === undefined || /^(?:Etc\/)?(?:UTC|UCT|GMT|Zulu|Universal)$/i.test(timezone)
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
