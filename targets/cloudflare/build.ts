import { join } from 'node:path'
import { readAppPackage } from '#svc/build/app-package.ts'
import type { TargetDescriptor } from '#svc/build/target.ts'
import { checkShards, TASKS_BINDING, TASKS_CLASS } from '#svc/cloudflare/binding.ts'

/**
 * Compatibility date written to wrangler.json: the workerd release the worker
 * is tested against in miniflare.
 */
export const COMPATIBILITY_DATE = '2025-09-01'

/** Paths the worker answers whatever public/ holds: API routes, the task admin surface, health, revalidate and cron. */
const WORKER_PATHS = ['/api', '/api/*', '/__tasks', '/__tasks/*', '/__health', '/__svc/*']

/**
 * The options of this target, from the app's package.json:
 * `{ "svc": { "cloudflare": { "shards": 4 } } }`. `shards` is how many
 * `SvcTasks` objects task runs spread over (docs/deploying.md "More than
 * one tasks object"), written into the entry for the worker and the object.
 */
export async function cloudflareOptions(root: string): Promise<{ shards: number }> {
  const svc = ((await readAppPackage(root)) as { svc?: { cloudflare?: { shards?: unknown } } }).svc
  return { shards: checkShards(svc?.cloudflare?.shards, 'package.json: svc.cloudflare.shards') }
}

/**
 * `.output/cloudflare/index.mjs` (a module worker), `wrangler.json` with every
 * schedule as a cron trigger, and the app's public/ folder as static assets.
 */
export const cloudflareTarget: TargetDescriptor = {
  name: 'cloudflare',
  hot: false,
  // Cron Triggers fire in UTC.
  cronTimezones: false,
  platform: 'worker',
  outDir: '.output/cloudflare',
  async write(ctx) {
    const out = join(ctx.root, this.outDir)
    // Task runs live in a SQLite-backed Durable Object; an app without
    // tasks has nothing to keep and gets no object.
    const tasks = ctx.routes.some((route) => route.kind === 'task')
    const { shards } = await cloudflareOptions(ctx.root)
    // Every instance of the one class is a shard: the binding and migration stay as they are.
    const options = shards > 1 ? `, { shards: ${shards} }` : ''
    // Only the parts of svc the app uses: a worker of routes carries no task
    // engine, a worker of tasks no store in memory, one object no shards.
    const pages = ctx.pages.length > 0
    const objects = shards > 1 ? 'SHARDED_OBJECTS' : 'ONE_OBJECT'
    const imports = ['composeWorker', ...(tasks ? ['composeTasksObject', 'objectTasks', objects] : []), ...(pages ? ['PAGES'] : [])]
    const parts = [...(tasks ? [`tasks: objectTasks(${objects})`] : []), ...(pages ? ['pages: PAGES'] : [])].join(', ')
    const entry = `${ctx.appSource}
import { ${imports.join(', ')} } from 'svcjs/cloudflare'
export default composeWorker(app, { ${parts} }${options})
${tasks ? `export const ${TASKS_CLASS} = composeTasksObject(app, ${objects}${options})\n` : ''}`
    const hasPublic = await ctx.copyPublic(join(out, 'public'))
    const wrangler = {
      name: workerName(ctx.root),
      main: 'index.mjs',
      compatibility_date: COMPATIBILITY_DATE,
      // The bundle holds no Node-only code paths, so no nodejs_compat flag is needed.
      compatibility_flags: [] as string[],
      // index.mjs is already one minified ES module; wrangler would bundle it
      // again, unminified, and upload a file other than the one built here.
      no_bundle: true,
      // Workers static assets serve a matching file before the worker runs,
      // and hand every other request to it. The worker's own paths always go
      // to the worker, as routes come before static files on the Node server.
      ...(hasPublic ? { assets: { directory: './public', run_worker_first: WORKER_PATHS } } : {}),
      triggers: { crons: ctx.crons },
      ...(tasks
        ? {
            durable_objects: { bindings: [{ name: TASKS_BINDING, class_name: TASKS_CLASS }] },
            // new_sqlite_classes: the object's storage is SQLite (ctx.storage.sql);
            // a class first deployed without it cannot be switched later.
            migrations: [{ tag: 'v1', new_sqlite_classes: [TASKS_CLASS] }],
          }
        : {}),
    }
    return [
      await ctx.bundle(entry, join(out, 'index.mjs')),
      await ctx.writeFile(join(out, 'wrangler.json'), `${JSON.stringify(wrangler, null, 2)}\n`),
    ]
  },
}

function workerName(root: string): string {
  const base = root.split(/[\\/]/).filter(Boolean).pop() ?? 'svc-app'
  return (
    base
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'svc-app'
  )
}
