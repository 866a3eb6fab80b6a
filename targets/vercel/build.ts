import { join } from 'node:path'
import type { TargetDescriptor } from '#svc/build/target.ts'

/** Node.js version of the generated function. */
export const VERCEL_NODE_RUNTIME = 'nodejs22.x'

/** The cron job of the tick: `/__svc/cron` without `?cron=`, every minute. */
export const VERCEL_TICK = { path: '/__svc/cron', schedule: '* * * * *' }

/**
 * `.vercel/output/` in the Build Output API v3 layout: one Node.js function
 * (`functions/__svc.func`) that every path routes to after static files, and
 * `crons` in `config.json` that call `/__svc/cron?cron=<expression>`, plus,
 * when the app has tasks, the one-minute tick on `/__svc/cron` that sweeps
 * the due work of a shared run store.
 */
export const vercelTarget: TargetDescriptor = {
  name: 'vercel',
  hot: false,
  // Vercel cron jobs fire in UTC.
  cronTimezones: false,
  platform: 'node',
  outDir: '.vercel/output',
  async write(ctx) {
    const out = join(ctx.root, this.outDir)
    const fn = join(out, 'functions', '__svc.func')
    const entry = `${ctx.appSource}
import { createVercelHandler } from 'svcjs/vercel'
export default createVercelHandler(app)
`
    const crons = ctx.crons.map((schedule) => ({ path: `/__svc/cron?cron=${encodeURIComponent(schedule)}`, schedule }))
    if (ctx.routes.some((route) => route.kind === 'task')) crons.push(VERCEL_TICK)
    const config = {
      version: 3,
      routes: [{ handle: 'filesystem' }, { src: '/(.*)', dest: '/__svc' }],
      crons,
    }
    const vcConfig = {
      runtime: VERCEL_NODE_RUNTIME,
      handler: 'index.mjs',
      launcherType: 'Nodejs',
      shouldAddHelpers: false,
      supportsResponseStreaming: true,
    }
    await ctx.copyPublic(join(out, 'static'))
    return [
      await ctx.bundle(entry, join(fn, 'index.mjs')),
      await ctx.writeFile(join(fn, '.vc-config.json'), `${JSON.stringify(vcConfig, null, 2)}\n`),
      await ctx.writeFile(join(out, 'config.json'), `${JSON.stringify(config, null, 2)}\n`),
    ]
  },
}
