import { join } from 'node:path'
import type { TargetDescriptor } from '../../src/build/target.ts'

/**
 * Compatibility date written to wrangler.json: the workerd release the worker
 * is tested against in miniflare.
 */
export const COMPATIBILITY_DATE = '2025-09-01'

/** `.output/cloudflare/index.mjs` (a module worker) and `wrangler.json` with every schedule as a cron trigger. */
export const cloudflareTarget: TargetDescriptor = {
  name: 'cloudflare',
  hot: false,
  // Cron Triggers fire in UTC.
  cronTimezones: false,
  platform: 'worker',
  outDir: '.output/cloudflare',
  async write(ctx) {
    const out = join(ctx.root, this.outDir)
    const entry = `${ctx.appSource}
import { createWorker } from 'svc/cloudflare'
export default createWorker(app)
`
    const wrangler = {
      name: workerName(ctx.root),
      main: 'index.mjs',
      compatibility_date: COMPATIBILITY_DATE,
      // The bundle holds no Node-only code paths, so no nodejs_compat flag is needed.
      compatibility_flags: [] as string[],
      triggers: { crons: ctx.crons },
    }
    return [
      await ctx.bundle(entry, join(out, 'index.mjs')),
      await ctx.writeFile(join(out, 'wrangler.json'), JSON.stringify(wrangler, null, 2) + '\n'),
    ]
  },
}

function workerName(root: string): string {
  const base = root.split(/[\\/]/).filter(Boolean).pop() ?? 'svc-app'
  return base.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'svc-app'
}
