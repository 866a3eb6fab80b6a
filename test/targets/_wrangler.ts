import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'

const wranglerBin = fileURLToPath(new URL('../../node_modules/wrangler/bin/wrangler.js', import.meta.url))

/**
 * `wrangler deploy --dry-run` run from the output directory, as a user deploys
 * it: wrangler reads wrangler.json, prepares the upload without sending it and
 * writes the module it would upload to `--outdir`. Offline.
 */
export async function wranglerDryRun(
  out: string,
): Promise<{ code: number | null; output: string; outdir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-wrangler-'))
  const outdir = join(dir, 'upload')
  const child = spawn(process.execPath, [wranglerBin, 'deploy', '--dry-run', '--outdir', outdir], {
    cwd: out,
    env: { ...process.env, CI: '1', WRANGLER_SEND_METRICS: 'false', WRANGLER_LOG_PATH: join(dir, 'logs'), NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, output, outdir, cleanup: () => rm(dir, { recursive: true, force: true }) }
}

/**
 * A worker built with `svc build --target cloudflare` at `out`, in workerd,
 * as its wrangler.json configures it, with `bindings` and its Durable
 * Objects kept in `persist`: a new one on the same directory is the same
 * storage after a restart.
 */
export async function startBuiltWorker(out: string, bindings: Record<string, string>, persist: string): Promise<Miniflare> {
  const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
  const started = new Miniflare({
    ...(workerOptions as object),
    scriptPath: main!,
    modulesRoot: out,
    modules: true,
    bindings,
    durableObjectsPersist: persist,
  })
  await started.ready
  return started
}
