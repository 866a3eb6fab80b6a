import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp, type BuildResult } from '../../src/build/build.ts'
import { copyFixtureApp, pollRun } from './_app.ts'

const SECRET = 'worker-secret'
const wranglerBin = fileURLToPath(new URL('../../node_modules/wrangler/bin/wrangler.js', import.meta.url))

/**
 * `wrangler deploy --dry-run` run from the output directory, as a user deploys
 * it: wrangler reads wrangler.json, prepares the upload without sending it and
 * writes the module it would upload to `--outdir`. Offline.
 */
async function wranglerDryRun(out: string): Promise<{ code: number | null; output: string; outdir: string; cleanup: () => Promise<void> }> {
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

describe('svc build --target cloudflare, run in miniflare', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let build: BuildResult
  let mf: Miniflare

  beforeAll(async () => {
    app = await copyFixtureApp()
    build = await buildApp({ root: app.root, target: 'cloudflare' })
    mf = new Miniflare({
      scriptPath: join(app.root, '.output/cloudflare/index.mjs'),
      modulesRoot: join(app.root, '.output/cloudflare'),
      modules: true,
      compatibilityDate: JSON.parse(await readFile(join(app.root, '.output/cloudflare/wrangler.json'), 'utf8')).compatibility_date,
      bindings: { THEN_TASK_SECRET: SECRET },
    })
  })
  afterAll(async () => {
    await mf?.dispose()
    await app?.cleanup()
  })

  const auth = { authorization: `Bearer ${SECRET}` }

  it('leaves hot routes out with the exact warning', () => {
    expect(build.warnings).toEqual([
      '[svc] 1 hot route(s) cannot run on cloudflare and were not bundled: /api/live — deploy them to a persistent host',
    ])
  })

  it('writes wrangler.json with main, compatibility date and every schedule as a cron trigger', async () => {
    const wrangler = JSON.parse(await readFile(join(app.root, '.output/cloudflare/wrangler.json'), 'utf8'))
    expect(wrangler.main).toBe('index.mjs')
    expect(wrangler.compatibility_date).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(wrangler.triggers).toEqual({ crons: ['*/10 * * * *'] })
    // The fixture has no public/ folder: no static assets to declare.
    expect(wrangler.assets).toBeUndefined()
  })

  it('serves serverless routes with params', async () => {
    const hello = await mf.dispatchFetch('http://localhost/api/hello?name=edge')
    expect(await hello.json()).toEqual({ hello: 'edge' })
    const user = await mf.dispatchFetch('http://localhost/api/users/42')
    expect(await user.json()).toEqual({ id: '42' })
  })

  it('does not serve the left-out hot route', async () => {
    const res = await mf.dispatchFetch('http://localhost/api/live')
    expect(res.status).toBe(404)
  })

  it('runs a task triggered over POST /__tasks/<name> and reports it on GET /__tasks/<id>', async () => {
    const res = await mf.dispatchFetch('http://localhost/__tasks/jobs.double', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ n: 21 }),
    })
    expect(res.status).toBe(202)
    const { id, status } = (await res.json()) as { id: string; status: string }
    expect(status).toBe('running')
    const run = await pollRun((runId) => mf.dispatchFetch(`http://localhost/__tasks/${runId}`, { headers: auth }) as unknown as Promise<Response>, id)
    expect(run).toMatchObject({ status: 'completed', ok: true, result: { doubled: 42 }, steps: { double: { status: 'completed', output: 42 } } })
  })

  it('rejects an invalid payload with 400 and a request without the secret with 401', async () => {
    const invalid = await mf.dispatchFetch('http://localhost/__tasks/jobs.double', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ n: 'x' }),
    })
    expect(invalid.status).toBe(400)
    expect(await invalid.json()).toMatchObject({ code: 'VALIDATION_FAILED' })
    const anonymous = await mf.dispatchFetch('http://localhost/__tasks')
    expect(anonymous.status).toBe(401)
  })

  it('fires the cron task on a scheduled event, which ends ok', async () => {
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> }
    expect((await worker.scheduled({ cron: '*/10 * * * *' })).outcome).toBe('ok')
    const res = await mf.dispatchFetch('http://localhost/api/ticks')
    expect(await res.json()).toEqual({ ticks: [{ _cron: true }] })
  })

  it('fires nothing for a cron no task uses', async () => {
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron: string }): Promise<unknown> }
    await worker.scheduled({ cron: '0 0 1 1 *' })
    const res = await mf.dispatchFetch('http://localhost/api/ticks')
    expect(((await res.json()) as { ticks: unknown[] }).ticks).toHaveLength(1)
  })
})

describe('svc build --target cloudflare, deployed with wrangler', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>

  beforeAll(async () => {
    app = await copyFixtureApp()
    await buildApp({ root: app.root, target: 'cloudflare' })
  })
  afterAll(() => app?.cleanup())

  // index.mjs is already one minified ES module: bundled again, it would
  // grow (wrangler does not minify) and no longer be the file that was tested.
  it('uploads index.mjs as it is, without bundling it again', async () => {
    const out = join(app.root, '.output/cloudflare')
    const dry = await wranglerDryRun(out)
    try {
      expect(dry.code, dry.output).toBe(0)
      expect(await readFile(join(dry.outdir, 'index.mjs'))).toEqual(await readFile(join(out, 'index.mjs')))
    } finally {
      await dry.cleanup()
    }
  })
})

describe('svc build --target cloudflare, an app with public/', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let out: string
  let mf: Miniflare

  beforeAll(async () => {
    app = await copyFixtureApp('static-files-app')
    // Files in public/ at the paths of a route and of the worker's own endpoints.
    await mkdir(join(app.root, 'public/api'), { recursive: true })
    await writeFile(join(app.root, 'public/api/hello'), 'a file, not the route\n')
    await writeFile(join(app.root, 'public/__health'), 'a file, not the health check\n')
    await buildApp({ root: app.root, target: 'cloudflare' })
    out = join(app.root, '.output/cloudflare')
    // Wrangler's own reading of wrangler.json, as `wrangler dev` runs it.
    const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
    const { workerOptions, main } = unstable_getMiniflareWorkerOptions(join(out, 'wrangler.json'))
    mf = new Miniflare({ ...(workerOptions as object), modules: true, scriptPath: main!, modulesRoot: out, bindings: { THEN_TASK_SECRET: SECRET } })
  })
  afterAll(async () => {
    await mf?.dispose()
    await app?.cleanup()
  })

  it('serves the files of public/ as static assets', async () => {
    const res = await mf.dispatchFetch('http://localhost/hello.txt')
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('served from public/\n')
  })

  it('still runs API routes and the worker endpoints in the worker, whatever public/ holds', async () => {
    expect(await (await mf.dispatchFetch('http://localhost/api/hello')).json()).toEqual({ hello: 'static app' })
    expect(await (await mf.dispatchFetch('http://localhost/__health')).json()).toMatchObject({ ok: true })
    expect((await mf.dispatchFetch('http://localhost/__tasks')).status).toBe(401)
    expect((await mf.dispatchFetch('http://localhost/missing.txt')).status).toBe(404)
  })

  it('is accepted by wrangler deploy', async () => {
    const dry = await wranglerDryRun(out)
    try {
      expect(dry.code, dry.output).toBe(0)
    } finally {
      await dry.cleanup()
    }
  })
})

describe('svc build --target cloudflare, a scheduled task that fails', () => {
  let app: Awaited<ReturnType<typeof copyFixtureApp>>
  let mf: Miniflare

  beforeAll(async () => {
    app = await copyFixtureApp('failing-cron-app')
    await buildApp({ root: app.root, target: 'cloudflare' })
    const out = join(app.root, '.output/cloudflare')
    mf = new Miniflare({
      scriptPath: join(out, 'index.mjs'),
      modulesRoot: out,
      modules: true,
      compatibilityDate: JSON.parse(await readFile(join(out, 'wrangler.json'), 'utf8')).compatibility_date,
      bindings: { THEN_TASK_SECRET: SECRET },
    })
  })
  afterAll(async () => {
    await mf?.dispose()
    await app?.cleanup()
  })

  // The platform reads the handler's outcome: a resolved scheduled() is a
  // success in the dashboard and in Cron Trigger alerts, however the task ended.
  it('ends the scheduled event in an exception', async () => {
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> }
    const result = await worker.scheduled({ cron: '0 3 * * *' })
    expect(result.outcome).toBe('exception')
    const tasks = await mf.dispatchFetch('http://localhost/__tasks', { headers: { authorization: `Bearer ${SECRET}` } })
    const { tasks: list } = (await tasks.json()) as { tasks: Array<{ name: string; lastRun: { status: string } | null }> }
    expect(Object.fromEntries(list.map((task) => [task.name, task.lastRun?.status]))).toEqual({ 'jobs.broken': 'failed', 'jobs.fine': 'completed' })
  })
})
